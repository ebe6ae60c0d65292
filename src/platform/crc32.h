// crc32.h — zlib's CRC-32 (reflected 0xEDB88320, init and xorout ~0), the
// checksum of expert records: libdeflate's, with a long buffer's bulk folded
// by 512-bit carry-less multiplies where the CPU has them (crc32.cpp).
#pragma once

#include <cstddef>
#include <cstdint>

namespace waste::platform {

uint32_t crc32(const void* data, size_t bytes, uint32_t previous = 0);
// libdeflate's alone (the reference crc32 is tested against).
uint32_t crc32_library(const void* data, size_t bytes, uint32_t previous = 0);
// Does crc32 fold on this CPU (VPCLMULQDQ and AVX-512 in an x86 GCC build)?
bool crc32_folds();

}  // namespace waste::platform
