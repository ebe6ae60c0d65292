#include "platform/aligned_buffer.h"

#include <sys/mman.h>

#include <cstring>

#include "platform/error.h"

namespace waste::platform {

void AlignedBuffer::Free::operator()(uint8_t* p) const {
    if (mapped) ::munmap(p, mapped);
    else std::free(p);
}

AlignedBuffer::AlignedBuffer(size_t bytes) : size_(bytes) {
    if (bytes == 0) return;
    const size_t rounded = (bytes + alignment - 1) / alignment * alignment;
    if (rounded >= large_buffer_bytes) {
        // Anonymous pages are zero: touched now, as the heap's memset touches
        // them, so that what the plan counts is resident from the start.
        void* memory = ::mmap(nullptr, rounded, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
        if (memory == MAP_FAILED) fail(WASTE_ERR_OUT_OF_MEMORY, "cannot map an aligned buffer of {} bytes", bytes);
        data_ = std::unique_ptr<uint8_t, Free>(static_cast<uint8_t*>(memory), Free{rounded});
        return;
    }
    void* memory = std::aligned_alloc(alignment, rounded);
    if (!memory) fail(WASTE_ERR_OUT_OF_MEMORY, "cannot allocate an aligned buffer of {} bytes", bytes);
    std::memset(memory, 0, rounded);
    data_ = std::unique_ptr<uint8_t, Free>(static_cast<uint8_t*>(memory), Free{0});
}

}  // namespace waste::platform
