#include "platform/aligned_buffer.h"

#include <cstring>

#include "platform/error.h"

namespace waste::platform {

AlignedBuffer::AlignedBuffer(size_t bytes) : size_(bytes) {
    if (bytes == 0) return;
    const size_t rounded = (bytes + alignment - 1) / alignment * alignment;
    void* memory = std::aligned_alloc(alignment, rounded);
    if (!memory) fail(WASTE_ERR_OUT_OF_MEMORY, "cannot allocate an aligned buffer of {} bytes", bytes);
    std::memset(memory, 0, rounded);
    data_.reset(static_cast<uint8_t*>(memory));
}

}  // namespace waste::platform
