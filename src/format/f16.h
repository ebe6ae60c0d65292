// f16.h — IEEE-754 binary16 conversion, portable bit arithmetic.
//
// Subnormals are real values (mantissa * 2^-24) and are never flushed to zero:
// upstream lost 1.08% of Kimi K3's scales that way (docs/anchors.md).
// f32 -> f16 rounds to nearest, ties to even, like a hardware conversion.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace waste::format {

inline float f16_to_f32(uint16_t half) {
    const uint32_t sign = static_cast<uint32_t>(half & 0x8000u) << 16;
    const uint32_t exponent = (half >> 10) & 0x1Fu;
    const uint32_t mantissa = half & 0x3FFu;
    if (exponent == 0) {
        // zero or subnormal: mantissa * 2^-24, exact in f32
        float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
        return sign ? -magnitude : magnitude;
    }
    if (exponent == 31) return std::bit_cast<float>(sign | 0x7F800000u | (mantissa << 13));
    return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

// The f16 value at element `index` of a little-endian byte array (trunk
// scales, VQ row scales: no alignment assumed).
inline float f16_at(const uint8_t* bytes, size_t index) {
    uint16_t half;
    std::memcpy(&half, bytes + 2 * index, 2);
    return f16_to_f32(half);
}

inline uint16_t f32_to_f16(float value) {
    const uint32_t bits = std::bit_cast<uint32_t>(value);
    const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
    const uint32_t magnitude = bits & 0x7FFFFFFFu;
    if (magnitude >= 0x7F800000u)  // inf or nan (nan keeps a quiet payload bit)
        return sign | 0x7C00u | (magnitude > 0x7F800000u ? 0x200u : 0u);
    if (magnitude >= 0x477FF000u) return sign | 0x7C00u;  // rounds to >= 65520: inf
    if (magnitude < 0x38800000u) {
        // result is subnormal (or zero): round |value| * 2^24 to an integer, ties to even
        const uint32_t shift = 126 - (magnitude >> 23);  // implicit-bit position to drop
        if (shift > 24) return sign;
        const uint32_t full = (magnitude & 0x7FFFFFu) | 0x800000u;
        uint32_t result = full >> shift;
        const uint32_t remainder = full & ((1u << shift) - 1);
        const uint32_t halfway = 1u << (shift - 1);
        if (remainder > halfway || (remainder == halfway && (result & 1u))) ++result;
        return sign | static_cast<uint16_t>(result);
    }
    // normal: rebias the exponent, round the 13 dropped mantissa bits to nearest even
    uint32_t result = ((magnitude >> 13) - (112u << 10));
    const uint32_t remainder = magnitude & 0x1FFFu;
    if (remainder > 0x1000u || (remainder == 0x1000u && (result & 1u))) ++result;
    return sign | static_cast<uint16_t>(result);
}

}  // namespace waste::format
