// ggml_blocks.cpp — see ggml_blocks.h. Block layouts: ggml-common.h of
// llama.cpp v0.4.0 (all fields little-endian, f16 scales unaligned).
#include "format/ggml_blocks.h"

#include <bit>
#include <cstring>

#include "format/f16.h"
#include "platform/error.h"

namespace waste::format {

namespace {

constexpr uint32_t kK = 256;  // elements of a K-quant or IQ super-block

// id, name, elements and bytes per block, decodable here.
constexpr GgmlType kTypes[] = {
    {0, "f32", 1, 4, true},
    {1, "f16", 1, 2, true},
    {2, "q4_0", 32, 18, true},
    {3, "q4_1", 32, 20, true},
    {6, "q5_0", 32, 22, true},
    {7, "q5_1", 32, 24, true},
    {8, "q8_0", 32, 34, true},
    {9, "q8_1", 32, 36, false},
    {10, "q2_K", kK, 84, true},
    {11, "q3_K", kK, 110, true},
    {12, "q4_K", kK, 144, true},
    {13, "q5_K", kK, 176, true},
    {14, "q6_K", kK, 210, true},
    {15, "q8_K", kK, 292, false},
    {16, "iq2_xxs", kK, 66, false},
    {17, "iq2_xs", kK, 74, false},
    {18, "iq3_xxs", kK, 98, false},
    {19, "iq1_s", kK, 50, false},
    {20, "iq4_nl", 32, 18, true},
    {21, "iq3_s", kK, 110, false},
    {22, "iq2_s", kK, 82, false},
    {23, "iq4_xs", kK, 136, true},
    {24, "i8", 1, 1, false},
    {25, "i16", 1, 2, false},
    {26, "i32", 1, 4, false},
    {27, "i64", 1, 8, false},
    {28, "f64", 1, 8, false},
    {29, "iq1_m", kK, 56, false},
    {30, "bf16", 1, 2, true},
    {34, "tq1_0", kK, 54, false},
    {35, "tq2_0", kK, 66, false},
    {39, "mxfp4", 32, 17, true},
    {40, "nvfp4", 64, 36, false},
    {41, "q1_0", 128, 18, false},
    {42, "q2_0", 64, 18, false},
};

// Q4_0's sixteen levels, IQ4_NL's, and MXFP4's (E2M1 values doubled; the
// scale is halved to match).
constexpr int8_t kQ4_0Levels[16] = {-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7};
constexpr int8_t kIq4nlLevels[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
constexpr int8_t kMxfp4Levels[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// An E8M0 exponent e as 2^(e-127) / 2, exactly (e < 2 gives subnormals).
float e8m0_half(uint8_t e) {
    const uint32_t bits = e < 2 ? 0x00200000u << e : static_cast<uint32_t>(e - 1) << 23;
    return std::bit_cast<float>(bits);
}

uint32_t u32_at(const uint8_t* p) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
}

// Q4_0, IQ4_NL and MXFP4: a scale, then 16 bytes whose low nibbles are
// elements 0–15 and high nibbles 16–31, each a level times the scale.
// (Q4_0's levels are nibble - 8; the product is the same either way round.)
void nibble_levels(float scale, const uint8_t* qs, const int8_t* levels, float* y) {
    for (int j = 0; j < 16; ++j) {
        y[j] = scale * static_cast<float>(levels[qs[j] & 0x0F]);
        y[j + 16] = scale * static_cast<float>(levels[qs[j] >> 4]);
    }
}

void q4_1(const uint8_t* b, float* y) {
    const float d = f16_at(b, 0), m = f16_at(b, 1);
    const uint8_t* qs = b + 4;
    for (int j = 0; j < 16; ++j) {
        y[j] = static_cast<float>(qs[j] & 0x0F) * d + m;
        y[j + 16] = static_cast<float>(qs[j] >> 4) * d + m;
    }
}

// Q5_0 and Q5_1: the fifth bit of element j is bit j of qh (elements 0–15)
// and bit j + 16 (elements 16–31).
void q5(const uint8_t* b, float* y, bool with_min) {
    const float d = f16_at(b, 0), m = with_min ? f16_at(b, 1) : 0.0f;
    const uint8_t* after_scales = b + (with_min ? 4 : 2);
    const uint32_t qh = u32_at(after_scales);
    const uint8_t* qs = after_scales + 4;
    for (int j = 0; j < 16; ++j) {
        const int high0 = ((qh >> j) << 4) & 0x10, high1 = (qh >> (j + 12)) & 0x10;
        const int x0 = (qs[j] & 0x0F) | high0, x1 = (qs[j] >> 4) | high1;
        if (with_min) {
            y[j] = static_cast<float>(x0) * d + m;
            y[j + 16] = static_cast<float>(x1) * d + m;
        } else {
            y[j] = static_cast<float>(x0 - 16) * d;
            y[j + 16] = static_cast<float>(x1 - 16) * d;
        }
    }
}

void q8_0(const uint8_t* b, float* y) {
    const float d = f16_at(b, 0);
    for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(static_cast<int8_t>(b[2 + j])) * d;
}

// Q2_K: scales[16] (low nibble scale, high nibble min), qs[64], d, dmin.
void q2_k(const uint8_t* b, float* y) {
    const uint8_t* scales = b;
    const uint8_t* q = b + 16;
    const float d = f16_at(b + 80, 0), dmin = f16_at(b + 80, 1);
    int is = 0;
    for (int n = 0; n < 256; n += 128) {
        for (int shift = 0; shift < 8; shift += 2) {
            for (int half = 0; half < 2; ++half) {
                const uint8_t sc = scales[is++];
                const float dl = d * static_cast<float>(sc & 0xF), ml = dmin * static_cast<float>(sc >> 4);
                for (int l = 0; l < 16; ++l)
                    *y++ = dl * static_cast<float>((q[l + 16 * half] >> shift) & 3) - ml;
            }
        }
        q += 32;
    }
}

// Q3_K: hmask[32] (the third bit, set meaning "not minus 4"), qs[64] (two
// low bits), twelve bytes of sixteen 6-bit scales (offset by 32), d.
void q3_k(const uint8_t* b, float* y) {
    const uint8_t* hmask = b;
    const uint8_t* q = b + 32;
    const float d_all = f16_at(b + 108, 0);
    uint32_t aux[4];
    std::memcpy(aux, b + 96, 12);
    constexpr uint32_t low2 = 0x03030303, low4 = 0x0f0f0f0f;
    const uint32_t tmp = aux[2];
    aux[2] = ((aux[0] >> 4) & low4) | (((tmp >> 4) & low2) << 4);
    aux[3] = ((aux[1] >> 4) & low4) | (((tmp >> 6) & low2) << 4);
    aux[0] = (aux[0] & low4) | (((tmp >> 0) & low2) << 4);
    aux[1] = (aux[1] & low4) | (((tmp >> 2) & low2) << 4);
    int8_t scales[16];
    for (int i = 0; i < 16; ++i) scales[i] = static_cast<int8_t>(aux[i / 4] >> (8 * (i % 4)));
    int is = 0;
    uint8_t m = 1;
    for (int n = 0; n < 256; n += 128) {
        for (int shift = 0; shift < 8; shift += 2) {
            for (int half = 0; half < 2; ++half) {
                const float dl = d_all * static_cast<float>(scales[is++] - 32);
                for (int l = 0; l < 16; ++l) {
                    const int i = l + 16 * half;
                    const int value = ((q[i] >> shift) & 3) - ((hmask[i] & m) ? 0 : 4);
                    *y++ = dl * static_cast<float>(value);
                }
            }
            m = static_cast<uint8_t>(m << 1);
        }
        q += 32;
    }
}

// Q4_K and Q5_K: eight 6-bit scales and eight 6-bit mins in 12 bytes.
void scale_min_k4(int j, const uint8_t* q, uint8_t& scale, uint8_t& min) {
    if (j < 4) {
        scale = q[j] & 63;
        min = q[j + 4] & 63;
    } else {
        scale = static_cast<uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        min = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

// Q4_K: d, dmin, scales[12], qs[128]; Q5_K adds qh[32] before qs.
void q45_k(const uint8_t* b, float* y, bool five) {
    const float d = f16_at(b, 0), dmin = f16_at(b, 1);
    const uint8_t* scales = b + 4;
    const uint8_t* qh = b + 16;
    const uint8_t* ql = b + (five ? 48 : 16);
    uint8_t u1 = 1, u2 = 2;
    for (int j = 0, is = 0; j < 256; j += 64, is += 2) {
        uint8_t sc, m;
        scale_min_k4(is, scales, sc, m);
        const float d1 = d * static_cast<float>(sc), m1 = dmin * static_cast<float>(m);
        scale_min_k4(is + 1, scales, sc, m);
        const float d2 = d * static_cast<float>(sc), m2 = dmin * static_cast<float>(m);
        for (int l = 0; l < 32; ++l) {
            const int high = five && (qh[l] & u1) ? 16 : 0;
            *y++ = d1 * static_cast<float>((ql[l] & 0xF) + high) - m1;
        }
        for (int l = 0; l < 32; ++l) {
            const int high = five && (qh[l] & u2) ? 16 : 0;
            *y++ = d2 * static_cast<float>((ql[l] >> 4) + high) - m2;
        }
        ql += 32;
        u1 = static_cast<uint8_t>(u1 << 2);
        u2 = static_cast<uint8_t>(u2 << 2);
    }
}

// Q6_K: ql[128] (low 4 bits), qh[64] (high 2 bits), sixteen int8 scales, d.
void q6_k(const uint8_t* b, float* y) {
    const uint8_t* ql = b;
    const uint8_t* qh = b + 128;
    const auto* sc = reinterpret_cast<const int8_t*>(b + 192);
    const float d = f16_at(b + 208, 0);
    for (int n = 0; n < 256; n += 128) {
        for (int l = 0; l < 32; ++l) {
            const int is = l / 16;
            const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
            const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
            const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
            const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
            y[l] = d * static_cast<float>(sc[is]) * static_cast<float>(q1);
            y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
            y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
            y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
        }
        y += 128;
        ql += 64;
        qh += 32;
        sc += 8;
    }
}

// IQ4_XS: d, the scales' high bits (u16), their low nibbles[4], qs[128];
// eight sub-blocks of 32 with a 6-bit scale offset by 32.
void iq4_xs(const uint8_t* b, float* y) {
    const float d = f16_at(b, 0);
    uint16_t scales_h;
    std::memcpy(&scales_h, b + 2, 2);
    const uint8_t* scales_l = b + 4;
    const uint8_t* qs = b + 8;
    for (int ib = 0; ib < 8; ++ib) {
        const int ls = ((scales_l[ib / 2] >> 4 * (ib % 2)) & 0xF) | (((scales_h >> 2 * ib) & 3) << 4);
        nibble_levels(d * static_cast<float>(ls - 32), qs, kIq4nlLevels, y);
        y += 32;
        qs += 16;
    }
}

}  // namespace

std::optional<GgmlType> ggml_type(uint32_t id) {
    for (const GgmlType& type : kTypes)
        if (type.id == id) return type;
    return std::nullopt;
}

void dequantize_ggml_row(const GgmlType& type, const uint8_t* blocks, float* out, size_t elements) {
    if (!type.decodable) fail_format("ggml type {} ({}) is not decoded by this engine", type.name, type.id);
    WASTE_CHECK(type.block_elements != 0 && elements % type.block_elements == 0);
    const size_t count = elements / type.block_elements;
    for (size_t i = 0; i < count; ++i) {
        const uint8_t* b = blocks + i * type.block_bytes;
        float* y = out + i * type.block_elements;
        switch (type.id) {
            case 0: std::memcpy(y, b, 4); break;
            case 1: *y = f16_at(b, 0); break;
            case 30: {
                uint16_t bf;
                std::memcpy(&bf, b, 2);
                *y = std::bit_cast<float>(static_cast<uint32_t>(bf) << 16);
                break;
            }
            case 2: nibble_levels(f16_at(b, 0), b + 2, kQ4_0Levels, y); break;
            case 3: q4_1(b, y); break;
            case 6: q5(b, y, false); break;
            case 7: q5(b, y, true); break;
            case 8: q8_0(b, y); break;
            case 10: q2_k(b, y); break;
            case 11: q3_k(b, y); break;
            case 12: q45_k(b, y, false); break;
            case 13: q45_k(b, y, true); break;
            case 14: q6_k(b, y); break;
            case 20: nibble_levels(f16_at(b, 0), b + 2, kIq4nlLevels, y); break;
            case 23: iq4_xs(b, y); break;
            case 39: nibble_levels(e8m0_half(b[0]), b + 1, kMxfp4Levels, y); break;
            default: WASTE_CHECK(!"a decodable type without a decoder");
        }
    }
}

}  // namespace waste::format
