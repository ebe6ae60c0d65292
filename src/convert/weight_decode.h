// weight_decode.h — element decoders for the weight formats of published
// checkpoints, as pure functions over little-endian bytes.
//
// Sources of the facts (docs/other-families.md, cited per function):
//   bf16 / f16 / f32   IEEE-754 (bf16 = the top 16 bits of an f32);
//   FP8 e4m3fn         §1 "FP8 block format" (DeepSeek-V3 / K2): fn variant,
//                      no infinities, S.1111.111 (0x7f, 0xff) is NaN;
//                      W[i,j] = fp8[i,j] * scale_inv[i/128, j/128];
//   MXFP4              §8 "MXFP4 decoding" and models.md §8: two E2M1 nibbles
//                      per byte, low nibble first (element 2j), one E8M0 scale
//                      per 32 values = 2^(e-127);
//   INT4 pack-quantized §1 "Kimi K2 Thinking INT4" (compressed-tensors):
//                      column 8c+j at bits 4j..4j+3 of int32 word c, value =
//                      (nibble - 8) * scale[o, i/32], symmetric.
//
// Every decoder writes f32 values and never checks them: the caller
// (Checkpoint) refuses NaN/Inf naming the tensor, via first_non_finite.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

namespace waste::convert {

static_assert(std::endian::native == std::endian::little, "the decoders read little-endian bytes in place");

// --- single values -----------------------------------------------------------

inline float bf16_to_f32(uint16_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

float f16_value(uint16_t bits);  // IEEE binary16, subnormals kept (mantissa * 2^-24)

// FP8 E4M3 "fn": bias 7, subnormals mantissa * 2^-9, no inf, 0x7f/0xff NaN;
// the largest finite value is 448.
float fp8_e4m3fn_to_f32(uint8_t code);

// FP4 E2M1 (the low 4 bits of `nibble`):
// 0, .5, 1, 1.5, 2, 3, 4, 6, -0, -.5, -1, -1.5, -2, -3, -4, -6.
float fp4_e2m1_to_f32(uint8_t nibble);

// E8M0 scale: 2^(e-127); e = 255 is NaN (OCP MX). e = 0 is 2^-127, a
// subnormal f32 — still exact.
float e8m0_to_f32(uint8_t e);

// --- runs of values ----------------------------------------------------------

void decode_f32(const uint8_t* src, size_t count, float* out);
void decode_bf16(const uint8_t* src, size_t count, float* out);
void decode_f16(const uint8_t* src, size_t count, float* out);

// One row of an FP8 block-scaled matrix: `cols` codes, and the row's block
// scales scale_inv[ceil(cols/block)] already in f32 (partial last block).
void decode_fp8_block_row(const uint8_t* codes, const float* block_scales, size_t cols, size_t block, float* out);

// One row of MXFP4: ceil(cols/2) bytes (low nibble = even element) and
// ceil(cols/32) E8M0 scale bytes.
void decode_mxfp4_row(const uint8_t* packed, const uint8_t* scales, size_t cols, float* out);

// One row of compressed-tensors INT4: ceil(cols/8) little-endian int32 words
// (as bytes) and the row's group scales in f32, ceil(cols/group) of them.
void decode_int4_row(const uint8_t* words, const float* group_scales, size_t cols, size_t group, float* out);

// Index of the first NaN or infinity in values[0..count), or count if none.
size_t first_non_finite(const float* values, size_t count);

}  // namespace waste::convert
