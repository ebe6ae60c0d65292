#include "convert/weight_decode.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "format/f16.h"

namespace waste::convert {
namespace {

// other-families.md §8: FP4_VALUES, indexed by the nibble (bit 3 = sign).
constexpr float fp4_values[16] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                                  -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};

struct Fp8Table {
    float values[256];
    Fp8Table() {
        for (int code = 0; code < 256; ++code) values[code] = fp8_e4m3fn_to_f32(static_cast<uint8_t>(code));
    }
};

const Fp8Table& fp8_table() {
    static const Fp8Table table;
    return table;
}

uint32_t load_u32(const uint8_t* p) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
}

}  // namespace

float f16_value(uint16_t bits) { return format::f16_to_f32(bits); }

float fp8_e4m3fn_to_f32(uint8_t code) {
    const bool negative = code & 0x80u;
    const int exponent = (code >> 3) & 0xF;
    const int mantissa = code & 0x7;
    float magnitude;
    if (exponent == 0xF && mantissa == 0x7) {
        magnitude = std::numeric_limits<float>::quiet_NaN();  // the fn variant's only NaN; there is no inf
    } else if (exponent == 0) {
        magnitude = std::ldexp(static_cast<float>(mantissa), -9);  // subnormal: (m/8) * 2^(1-7)
    } else {
        magnitude = std::ldexp(static_cast<float>(8 + mantissa), exponent - 7 - 3);  // (1 + m/8) * 2^(e-7)
    }
    return negative ? -magnitude : magnitude;
}

float fp4_e2m1_to_f32(uint8_t nibble) { return fp4_values[nibble & 0xF]; }

float e8m0_to_f32(uint8_t e) {
    if (e == 0xFF) return std::numeric_limits<float>::quiet_NaN();
    return std::ldexp(1.0f, static_cast<int>(e) - 127);
}

void decode_f32(const uint8_t* src, size_t count, float* out) { std::memcpy(out, src, count * sizeof(float)); }

void decode_bf16(const uint8_t* src, size_t count, float* out) {
    for (size_t i = 0; i < count; ++i) {
        uint16_t bits;
        std::memcpy(&bits, src + 2 * i, 2);
        out[i] = bf16_to_f32(bits);
    }
}

void decode_f16(const uint8_t* src, size_t count, float* out) {
    for (size_t i = 0; i < count; ++i) {
        uint16_t bits;
        std::memcpy(&bits, src + 2 * i, 2);
        out[i] = format::f16_to_f32(bits);
    }
}

void decode_fp8_block_row(const uint8_t* codes, const float* block_scales, size_t cols, size_t block, float* out) {
    const float* table = fp8_table().values;
    for (size_t start = 0, b = 0; start < cols; start += block, ++b) {
        const size_t end = start + block < cols ? start + block : cols;  // the last block may be partial
        const float scale = block_scales[b];
        for (size_t j = start; j < end; ++j) out[j] = table[codes[j]] * scale;
    }
}

void decode_mxfp4_row(const uint8_t* packed, const uint8_t* scales, size_t cols, float* out) {
    size_t j = 0;
    // Whole groups: 16 bytes, each byte two elements (low nibble first), one scale.
    for (; j + 32 <= cols; j += 32) {
        const float scale = e8m0_to_f32(scales[j / 32]);
        const uint8_t* bytes = packed + j / 2;
        for (size_t b = 0; b < 16; ++b) {
            out[j + 2 * b] = fp4_values[bytes[b] & 0xF] * scale;
            out[j + 2 * b + 1] = fp4_values[bytes[b] >> 4] * scale;
        }
    }
    // A partial last group (cols not a multiple of 32, possibly odd).
    for (; j < cols; ++j) {
        const uint8_t byte = packed[j / 2];
        const uint8_t nibble = (j & 1) ? static_cast<uint8_t>(byte >> 4) : static_cast<uint8_t>(byte & 0xF);
        out[j] = fp4_values[nibble] * e8m0_to_f32(scales[j / 32]);
    }
}

void decode_int4_row(const uint8_t* words, const float* group_scales, size_t cols, size_t group, float* out) {
    size_t j = 0;
    if (group % 8 == 0) {
        // Whole words: the 8 columns of a word share one group scale.
        for (; j + 8 <= cols; j += 8) {
            const uint32_t word = load_u32(words + j / 2);
            const float scale = group_scales[j / group];
            for (size_t k = 0; k < 8; ++k) out[j + k] = static_cast<float>(static_cast<int>((word >> (4 * k)) & 0xFu) - 8) * scale;
        }
    }
    for (; j < cols; ++j) {
        const uint32_t word = load_u32(words + 4 * (j / 8));
        const int nibble = static_cast<int>((word >> (4 * (j % 8))) & 0xFu);
        out[j] = static_cast<float>(nibble - 8) * group_scales[j / group];
    }
}

size_t first_non_finite(const float* values, size_t count) {
    // Blocks without an early exit vectorise; the exact index is found only
    // in a block that has a bad value.
    constexpr size_t block = 256;
    size_t i = 0;
    for (; i + block <= count; i += block) {
        uint32_t bad = 0;
        for (size_t k = 0; k < block; ++k) {
            uint32_t bits;
            std::memcpy(&bits, values + i + k, 4);
            bad |= static_cast<uint32_t>((bits & 0x7F800000u) == 0x7F800000u);
        }
        if (bad) break;
    }
    for (; i < count; ++i) {
        uint32_t bits;
        std::memcpy(&bits, values + i, 4);
        if ((bits & 0x7F800000u) == 0x7F800000u) return i;
    }
    return count;
}

}  // namespace waste::convert
