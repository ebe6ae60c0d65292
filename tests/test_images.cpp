// test_images.cpp — images for tests (test_images.h).
#include "test_images.h"

#include <random>

namespace waste_test {

std::string random_bmp(uint32_t width, uint32_t height, uint32_t seed) {
    std::mt19937 random(seed);
    const uint32_t stride = (width * 3 + 3) / 4 * 4, size = 54 + stride * height;
    std::string out(size, '\0');
    auto put32 = [&](size_t at, uint32_t v) {
        for (int i = 0; i < 4; ++i) out[at + i] = static_cast<char>(v >> (8 * i));
    };
    out[0] = 'B';
    out[1] = 'M';
    put32(2, size);
    put32(10, 54);  // pixel data offset: after the 14-byte file and 40-byte info headers
    put32(14, 40);
    put32(18, width);
    put32(22, height);
    out[26] = 1;   // planes
    out[28] = 24;  // bits per pixel
    put32(34, stride * height);
    for (uint32_t y = 0; y < height; ++y)
        for (uint32_t x = 0; x < width * 3; ++x) out[54 + y * stride + x] = static_cast<char>(random() & 0xff);
    return out;
}

}  // namespace waste_test
