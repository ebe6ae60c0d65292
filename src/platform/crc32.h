// crc32.h — zlib's CRC-32 (reflected 0xEDB88320, init and xorout ~0), the
// checksum of expert records. libdeflate's implementation uses carry-less
// multiplication where the CPU has it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace waste::platform {

uint32_t crc32(const void* data, size_t bytes, uint32_t previous = 0);

}  // namespace waste::platform
