// trunk_int8.h — the trunk's projections in the int8 mode (`--lut int8`):
// Q8G and Q4G weights multiplied as they are stored (no new copy of the
// trunk) by activations quantised to int8, with integer dot products
// (AVX-512 VNNI: 64 multiply-adds an instruction; AVX2: the pairwise byte
// multiply; NEON: the scalar reference for now). The exact path
// (trunk_matvec.h) decodes every weight to f32 for every token, which kept
// decode's trunk and LM head compute-bound (docs/bench-log/llama-cpp-kimi.md,
// "The trunk in integers, and prefetching into L2").
//
// The approximation is the activations' only; the weights are the
// container's integers:
//   activations: token t's columns in the tensor's groups of G,
//                xq[t][c] = round(x · (127 / max_g |x|)) (nearest even),
//                xs[t][g] = max_g|x| / 127
//   y[t][r] = Σ_g rounded(rounded(ws[r][g] · xs[t][g]) · dot_g),
//             dot_g = Σ_{c in g} q[r][c] · xq[t][c]
// dot_g is exact in int32, its conversion to f32 and the f32 steps are the
// same in every body, in group order: every ISA gives the scalar
// reference's bits, and a (token, row) is one thread's, so thread splits
// and chunk sizes change nothing.
//
// The VNNI body multiplies unsigned by signed bytes: the weights go in as
// their stored codes u = q + b (Q8G: the byte with its top bit flipped,
// b = 128; Q4G: the nibble, b = 8) and each group's dot loses b · Σ xq.
// Q4G's two nibbles of a byte hold columns 2i and 2i+1, so for those tensors
// the activations are stored a span of columns at a time, evens first then
// odds (the nibbles' order once a byte vector is split into low and high
// halves). The span is 128 columns when the group holds whole 128s — one
// 64-byte load of weights then covers both halves, which took the VNNI
// decode product from ~10 operations a 64 weight bytes to 6 — else 64.
#pragma once

#include <cstddef>
#include <cstdint>

#include "format/container.h"
#include "kernels/isa.h"
#include "platform/aligned_vector.h"
#include "platform/thread_pool.h"

namespace waste::kernels {

// Can the int8 product run on this tensor? Q8G or Q4G whose group is a
// multiple of 64 columns and at most 4096 (every group's integer dot fits
// int32). Other tensors (F32, Q3G) keep the exact path in the int8 mode.
bool trunk_int8_eligible(const format::TrunkTensor& w);

// A chunk's quantised inputs to one tensor, in buffers sized once for the
// widest input and the longest chunk (trunk_int8_input_bytes).
struct TrunkInt8Input {
    platform::LineAlignedVector<int8_t> q;  // [tokens][ld]
    std::vector<float> scale;               // [tokens][groups]
    std::vector<int32_t> sum;               // [tokens][groups]: Σ q of each group
    size_t tokens = 0, ld = 0, group = 0, groups = 0;
    size_t nibble_span = 0;                 // Q4G's order (see above): 128 or 64; 0: natural order

    // Buffers for up to `tokens` tokens of up to `cols` columns.
    void reserve(size_t tokens, size_t cols);
    size_t capacity_tokens = 0, capacity_cols = 0;
};
// The bytes reserve(tokens, cols) allocates (the memory plan's share).
size_t trunk_int8_input_bytes(size_t tokens, size_t cols);

// x: [tokens][ldx], the first w.cols of each row. in must be reserved for them.
void quantize_trunk_input(Isa isa, const format::TrunkTensor& w, const float* x, size_t ldx, size_t tokens, TrunkInt8Input& in);

// Rows [row_begin, row_end) of Y = X Wᵀ (y: [tokens][ldy], absolute rows).
void trunk_int8_rows(Isa isa, const format::LoadedTensor& w, const TrunkInt8Input& in, float* y, size_t ldy, size_t row_begin,
                     size_t row_end);

// The whole product: x quantised into `in`, rows split over the pool.
void trunk_int8_matmul(platform::ThreadPool& pool, const format::LoadedTensor& w, const float* x, size_t ldx, size_t tokens,
                       float* y, size_t ldy, TrunkInt8Input& in);

}  // namespace waste::kernels
