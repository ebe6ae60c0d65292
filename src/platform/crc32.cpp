#include "platform/crc32.h"

#include <libdeflate.h>

namespace waste::platform {

uint32_t crc32(const void* data, size_t bytes, uint32_t previous) {
    // libdeflate treats a NULL buffer as "give me the initial value" and
    // returns 0, which an empty vector's data() can be: an empty span must
    // leave a running CRC unchanged instead.
    if (bytes == 0) return previous;
    return libdeflate_crc32(previous, data, bytes);
}

}  // namespace waste::platform
