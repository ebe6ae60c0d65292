#include "platform/aligned_buffer.h"

#include <cstring>

#include "platform/error.h"
#include "platform/system_memory.h"

namespace waste::platform {

void AlignedBuffer::Free::operator()(uint8_t* p) const {
    if (mapped) unmap_pages(p, mapped);
    else free_aligned(p);
}

AlignedBuffer::AlignedBuffer(size_t bytes) : size_(bytes) {
    if (bytes == 0) return;
    const size_t rounded = (bytes + alignment - 1) / alignment * alignment;
    if (rounded >= large_buffer_bytes) {
        // Anonymous pages are zero: touched now, as the heap's memset touches
        // them, so that what the plan counts is resident from the start.
        // Transparent huge pages where the system allows them (madvise
        // mode is Debian's default): the trunk and the expert cache are
        // streamed through every token, and with 4 KiB pages each page
        // costs a TLB walk and stops the hardware prefetcher — the LM head
        // read its rows faster on 2 MiB pages (docs/bench-log/decode-and-prefill.md,
        // "Issue 19's first kernel work").
        // The resident bytes are the same: every page is touched either way.
        void* memory = map_resident_pages(rounded);
        if (!memory) fail(WASTE_ERR_OUT_OF_MEMORY, "cannot map an aligned buffer of {} bytes", bytes);
        data_ = std::unique_ptr<uint8_t, Free>(static_cast<uint8_t*>(memory), Free{rounded});
        return;
    }
    void* memory = allocate_aligned(alignment, rounded);
    if (!memory) fail(WASTE_ERR_OUT_OF_MEMORY, "cannot allocate an aligned buffer of {} bytes", bytes);
    std::memset(memory, 0, rounded);
    data_ = std::unique_ptr<uint8_t, Free>(static_cast<uint8_t*>(memory), Free{0});
}

}  // namespace waste::platform
