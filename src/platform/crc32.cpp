#include "platform/crc32.h"

#include <libdeflate.h>

namespace waste::platform {

uint32_t crc32(const void* data, size_t bytes, uint32_t previous) {
    return libdeflate_crc32(previous, data, bytes);
}

}  // namespace waste::platform
