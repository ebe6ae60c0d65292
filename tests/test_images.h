// test_images.h — images written byte by byte for tests that need a file
// the decoder reads (the image tests themselves carry real encoder outputs).
#pragma once

#include <cstdint>
#include <string>

namespace waste_test {

// A 24-bit BMP of pseudo-random pixels from `seed` (bottom-up rows padded to
// 4 bytes), the smallest format whose header these tests can write.
std::string random_bmp(uint32_t width, uint32_t height, uint32_t seed);

}  // namespace waste_test
