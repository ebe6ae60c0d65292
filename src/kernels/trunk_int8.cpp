#include "kernels/trunk_int8.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "format/f16.h"
#include "kernels/int8_matmul.h"
#include "platform/error.h"

#if WASTE_X86_SIMD
#include <immintrin.h>

#include "platform/target_region.h"

#include "kernels/int8_reduce_avx512.h"

// GCC 12 warns inside its own AVX-512 headers (_mm512_undefined_* used as
// the pass-through of unmasked intrinsics): a known false positive.
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)  // a GCC-only warning
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#endif

namespace waste::kernels {

using format::TrunkFormat;

namespace {

constexpr size_t chunk = 64;          // columns per vector; Q4G's order repeats every 64
constexpr size_t max_group = 4096;    // 4096 · 255 · 127 < 2^31
constexpr size_t row_grain = 16;      // rows a thread's slice is a multiple of (whole 4-row tiles)

// Q4G's input span for a group of G columns (trunk_int8.h): 128 columns
// when the group holds whole 128s, else 64.
inline size_t nibble_span(size_t G) { return G % 128 == 0 ? 128 : chunk; }

// Where natural column c is stored in Q4G's order of that span: its span's
// evens, then its odds.
inline size_t nibble_position(size_t c, size_t span) { return c / span * span + c % 2 * (span / 2) + c % span / 2; }

// The weight q[r][c] as stored (Q8G: the int8; Q4G: nibble - 8).
inline int weight_at(const format::TrunkTensor& t, const uint8_t* row, size_t c) {
    if (t.fmt == TrunkFormat::q8g) return static_cast<int8_t>(row[c]);
    return static_cast<int>((row[c / 2] >> ((c & 1) * 4)) & 0xF) - 8;
}

void rows_scalar(const format::LoadedTensor& w, const TrunkInt8Input& in, float* y, size_t ldy, size_t row_begin,
                 size_t row_end) {
    const format::TrunkTensor& t = *w.info;
    const size_t G = in.group;
    for (size_t r = row_begin; r < row_end; ++r) {
        const uint8_t* row = w.payload.data() + r * t.row_stride;
        const uint8_t* scales = w.scales.data() + r * t.groups_per_row * 2;
        for (size_t k = 0; k < in.tokens; ++k) {
            const int8_t* x = in.q.data() + k * in.ld;
            float acc = 0;
            for (size_t g = 0; g < in.groups; ++g) {
                int32_t dot = 0;
                for (size_t c = g * G; c < (g + 1) * G; ++c) {
                    const size_t at = in.nibble_span ? nibble_position(c, in.nibble_span) : c;
                    dot += weight_at(t, row, c) * x[at];
                }
                const float s = rounded(format::f16_at(scales, g) * in.scale[k * in.groups + g]);
                acc += rounded(s * static_cast<float>(dot));
            }
            y[k * ldy + r] = acc;
        }
    }
}

#if WASTE_X86_SIMD
WASTE_TARGET_BEGIN("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")

namespace vnni {

// 64 weights' codes u = q + b as unsigned bytes from column c of a row:
// Q8G's bytes with the top bit flipped; Q4G's 32 bytes split into their low
// nibbles (even columns) then their high ones (odd columns).
template <bool Q4>
inline __m512i weight_codes(const uint8_t* row, size_t c) {
    if constexpr (Q4) {
        const __m256i bytes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + c / 2));
        const __m512i both = _mm512_inserti64x4(_mm512_castsi256_si512(bytes), _mm256_srli_epi16(bytes, 4), 1);
        return _mm512_and_si512(both, _mm512_set1_epi8(0x0F));
    } else {
        return _mm512_xor_si512(_mm512_loadu_si512(row + c), _mm512_set1_epi8(static_cast<char>(0x80)));
    }
}

// A 128-column span of Q4G weights (its 64 bytes from column c): the codes
// of its even columns (the low nibbles) and of its odd ones (the high).
inline void nibble_halves(const uint8_t* row, size_t c, __m512i& low, __m512i& high) {
    const __m512i bytes = _mm512_loadu_si512(row + c / 2);
    const __m512i mask = _mm512_set1_epi8(0x0F);
    low = _mm512_and_si512(bytes, mask);
    high = _mm512_and_si512(_mm512_srli_epi16(bytes, 4), mask);
}

// Wide: Q4G in 128-column spans (nibble_halves), 128 columns a step.
// 4 rows × 4 tokens (16 accumulators, lane 4k + j: row k, token j). Per
// group: the 16 sums reduced to one vector, the b · Σ xq correction, then
// the reference's f32 steps lane by lane.
template <bool Q4, bool Wide>
void tile(const format::LoadedTensor& w, const TrunkInt8Input& in, size_t t0, size_t r0, float* y, size_t ldy) {
    constexpr size_t step = Wide ? 2 * chunk : chunk;
    const format::TrunkTensor& t = *w.info;
    const size_t G = in.group, stride = t.row_stride, groups = in.groups;
    const uint8_t* base = w.payload.data() + r0 * stride;
    const uint8_t* row_scales = w.scales.data() + r0 * t.groups_per_row * 2;
    const __m512i row_of_lane = _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0);
    const float* xs = in.scale.data() + t0 * groups;
    const int32_t* xsum = in.sum.data() + t0 * groups;
    __m512 acc = _mm512_setzero_ps();
    for (size_t g = 0; g < groups; ++g) {
        __m512i dot[16];
        for (int i = 0; i < 16; ++i) dot[i] = _mm512_setzero_si512();
        for (size_t c = g * G; c < (g + 1) * G; c += step) {
            // the first token block streams the rows (later ones find them
            // in L1): the rows two tiles on, into L2, as int8_matmul does
            if (t0 == 0)
                for (int k = 0; k < 4; ++k)
                    _mm_prefetch(reinterpret_cast<const char*>(base + (8 + k) * stride + (Q4 ? c / 2 : c)), _MM_HINT_T1);
            if constexpr (Wide) {
                __m512i even[4], odd[4];
                for (int j = 0; j < 4; ++j) {
                    even[j] = _mm512_loadu_si512(in.q.data() + (t0 + j) * in.ld + c);
                    odd[j] = _mm512_loadu_si512(in.q.data() + (t0 + j) * in.ld + c + chunk);
                }
                for (int k = 0; k < 4; ++k) {
                    __m512i low, high;
                    nibble_halves(base + k * stride, c, low, high);
                    for (int j = 0; j < 4; ++j)
                        dot[4 * k + j] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(dot[4 * k + j], low, even[j]), high, odd[j]);
                }
                continue;
            }
            __m512i x[4];
            for (int j = 0; j < 4; ++j) x[j] = _mm512_loadu_si512(in.q.data() + (t0 + j) * in.ld + c);
            for (int k = 0; k < 4; ++k) {
                const __m512i u = weight_codes<Q4>(base + k * stride, c);
                for (int j = 0; j < 4; ++j) dot[4 * k + j] = _mm512_dpbusd_epi32(dot[4 * k + j], u, x[j]);
            }
        }
        // lanes 4k + j: Σ xq and the scale of token j, the f16 scale of row k
        const __m512i sums = _mm512_broadcast_i32x4(_mm_set_epi32(xsum[3 * groups + g], xsum[2 * groups + g], xsum[groups + g], xsum[g]));
        const __m512 token_scale = _mm512_broadcast_f32x4(_mm_set_ps(xs[3 * groups + g], xs[2 * groups + g], xs[groups + g], xs[g]));
        uint16_t h[4];
        for (int k = 0; k < 4; ++k) std::memcpy(&h[k], row_scales + (k * t.groups_per_row + g) * 2, 2);
        const __m128 row_scale = _mm_cvtph_ps(_mm_set_epi16(0, 0, 0, 0, static_cast<short>(h[3]), static_cast<short>(h[2]),
                                                            static_cast<short>(h[1]), static_cast<short>(h[0])));
        const __m512i exact = _mm512_sub_epi32(int8_reduce16(dot), _mm512_slli_epi32(sums, Q4 ? 3 : 7));  // - b · Σ xq
        __m512 s = _mm512_mul_ps(_mm512_permutexvar_ps(row_of_lane, _mm512_castps128_ps512(row_scale)), token_scale);
        __asm__("" : "+v"(s));  // rounded, never fused
        __m512 product = _mm512_mul_ps(s, _mm512_cvtepi32_ps(exact));
        __asm__("" : "+v"(product));
        acc = _mm512_add_ps(acc, product);
    }
    alignas(64) float out[16];
    _mm512_store_ps(out, acc);
    for (int k = 0; k < 4; ++k)
        for (int j = 0; j < 4; ++j) y[(t0 + j) * ldy + r0 + k] = out[4 * k + j];
}

// One Q8G token (decode's LM head). Rows are stored back to back, so the
// (row, group) pairs lie in storage order, G bytes each: they are walked as
// one forward stream, n ≤ 16 pairs at a time, each pair's G columns summed
// into a vector of its own and the 16 reduced together, the weights
// prefetched ahead into L2 and, near, into L1. Streamed from DRAM, this walk
// reads a 32768 × 1024 Q8G matrix faster than the 4 × 4 tile below (4 rows at
// once), nearer a plain read (docs/bench-log/llama-cpp-kimi.md, "The apply's
// segment walk and the LM head's pair walk"). Q4G keeps the tile: its nibble
// unpack makes a pair's work dearer, and there this walk was no faster
// streamed and slower in cache.
//
// run_products: lane j is pair p0 + j's product s · Σ q·xq, as the
// reference rounds it; x_scale and x_sum hold the lanes' token scale and
// Σ xq; g0 is pair p0's group.
constexpr size_t far_ahead = 16384, near_ahead = 512;  // bytes on in the stream: into L2, into L1
// The f16 scales are a stream of their own (2 bytes a pair, after the
// weights), too thin for the hardware's prefetchers to follow: waiting on
// them was a good share of this walk's time (docs/bench-log/llama-cpp-kimi.md,
// "Scales, cold state and the nibble span"). Fetched into L1 this many bytes on.
constexpr size_t scales_ahead = 1024;

inline __m512 run_products(const format::LoadedTensor& w, const TrunkInt8Input& in, const int8_t* xq, size_t p0, size_t n,
                           size_t g0, __m512 x_scale, __m512i x_sum) {
    const size_t G = in.group, groups = in.groups;
    const uint8_t* base = w.payload.data() + p0 * G;
    _mm_prefetch(reinterpret_cast<const char*>(w.scales.data() + p0 * 2 + scales_ahead), _MM_HINT_T0);
    __m512i dot[16];
    for (int i = 0; i < 16; ++i) dot[i] = _mm512_setzero_si512();
    size_t g = g0;
    // pair J into dot[J] (J a constant, so the 16 sums stay in registers)
    auto pair = [&]<int J>() __attribute__((always_inline)) {
        if (static_cast<size_t>(J) >= n) return;
        const uint8_t* at = base + J * G;
        const int8_t* x = xq + g * G;
        for (size_t c = 0; c < G; c += chunk) {
            _mm_prefetch(reinterpret_cast<const char*>(at + c + far_ahead), _MM_HINT_T1);
            _mm_prefetch(reinterpret_cast<const char*>(at + c + near_ahead), _MM_HINT_T0);
            dot[J] = _mm512_dpbusd_epi32(dot[J], weight_codes<false>(at, c), _mm512_loadu_si512(x + c));
        }
        if (++g == groups) g = 0;
    };
    [&]<int... J>(std::integer_sequence<int, J...>) __attribute__((always_inline)) {
        (pair.template operator()<J>(), ...);  // J = 0, 1, ..., 15 in order
    }(std::make_integer_sequence<int, 16>{});
    const __mmask16 present = static_cast<__mmask16>((1u << n) - 1);
    const __m512i exact = _mm512_sub_epi32(int8_reduce16(dot), _mm512_slli_epi32(x_sum, 7));  // - b · Σ xq
    __m512 s = _mm512_mul_ps(_mm512_cvtph_ps(_mm256_maskz_loadu_epi16(present, w.scales.data() + p0 * 2)), x_scale);
    __asm__("" : "+v"(s));  // rounded, never fused
    __m512 product = _mm512_mul_ps(s, _mm512_cvtepi32_ps(exact));
    __asm__("" : "+v"(product));
    return product;
}

// Rows of ≤ 16 groups go 16 / groups whole rows a run (every run starts at
// group 0, so the lanes' token scales are set once); longer rows go 16
// groups a run. Each row's products are added in group order.
void token_rows(const format::LoadedTensor& w, const TrunkInt8Input& in, size_t token, size_t row_begin, size_t row_end,
                float* y, size_t ldy) {
    const size_t groups = in.groups;
    const int8_t* xq = in.q.data() + token * in.ld;
    const float* xs = in.scale.data() + token * groups;
    const int32_t* xsum = in.sum.data() + token * groups;
    alignas(64) float out[16];
    if (groups <= 16) {
        const size_t per_run = 16 / groups;
        alignas(64) float lane_scale[16] = {};
        alignas(64) int32_t lane_sum[16] = {};
        for (size_t j = 0; j < per_run * groups; ++j) {
            lane_scale[j] = xs[j % groups];
            lane_sum[j] = xsum[j % groups];
        }
        const __m512 x_scale = _mm512_load_ps(lane_scale);
        const __m512i x_sum = _mm512_load_si512(lane_sum);
        for (size_t r = row_begin; r < row_end; r += per_run) {
            const size_t rows_here = std::min(per_run, row_end - r);
            _mm512_store_ps(out, run_products(w, in, xq, r * groups, rows_here * groups, 0, x_scale, x_sum));
            for (size_t k = 0; k < rows_here; ++k) {
                float acc = 0;
                for (size_t i = 0; i < groups; ++i) acc += out[k * groups + i];
                y[token * ldy + r + k] = acc;
            }
        }
        return;
    }
    for (size_t r = row_begin; r < row_end; ++r) {
        float acc = 0;
        for (size_t g0 = 0; g0 < groups; g0 += 16) {
            const size_t n = std::min<size_t>(16, groups - g0);
            const __mmask16 present = static_cast<__mmask16>((1u << n) - 1);
            _mm512_store_ps(out, run_products(w, in, xq, r * groups + g0, n, g0, _mm512_maskz_loadu_ps(present, xs + g0),
                                              _mm512_maskz_loadu_epi32(present, xsum + g0)));
            for (size_t j = 0; j < n; ++j) acc += out[j];
        }
        y[token * ldy + r] = acc;
    }
}

// How many rows on a one-token tile prefetches its rows: ~32 KB.
inline size_t rows_ahead(size_t stride) { return std::max<size_t>(8, 32768 / stride); }

// The f16 scales of rows [begin, end), into L1 (see scales_ahead).
inline void prefetch_scales(const format::LoadedTensor& w, size_t begin, size_t end) {
    const size_t row_bytes = w.info->groups_per_row * 2;
    const uint8_t* first = w.scales.data() + begin * row_bytes;
    for (size_t at = 0; at < (end - begin) * row_bytes; at += 64) _mm_prefetch(reinterpret_cast<const char*>(first + at), _MM_HINT_T0);
}

// One Q4G token: 4 rows × 4 consecutive groups (lane 4k + i: row k, group
// g0 + i), so each row is read as one run of 4 groups; the products are
// added to each row's sum group by group, in order, as the reference does.
template <bool Wide>
void token_tile(const format::LoadedTensor& w, const TrunkInt8Input& in, size_t token, size_t r0, float* y, size_t ldy) {
    constexpr size_t step = Wide ? 2 * chunk : chunk;
    const format::TrunkTensor& t = *w.info;
    const size_t G = in.group, stride = t.row_stride;
    const uint8_t* base = w.payload.data() + r0 * stride;
    const size_t prefetch_rows = rows_ahead(stride);
    const int8_t* xq = in.q.data() + token * in.ld;
    const float* xs = in.scale.data() + token * in.groups;
    const int32_t* xsum = in.sum.data() + token * in.groups;
    const uint8_t* row_scales = w.scales.data() + r0 * t.groups_per_row * 2;
    prefetch_scales(w, r0 + prefetch_rows, r0 + prefetch_rows + 4);  // see scales_ahead
    __m128 acc = _mm_setzero_ps();  // lane k: row r0 + k
    for (size_t g0 = 0; g0 < in.groups; g0 += 4) {
        const size_t n = std::min<size_t>(4, in.groups - g0);
        __m512i dot[16];
        for (int i = 0; i < 16; ++i) dot[i] = _mm512_setzero_si512();
        // group g0 + I into dot[I], dot[4 + I], ...: I a constant, so the 16
        // sums stay in registers
        auto pass = [&]<int I>() {
            if (static_cast<size_t>(I) >= n) return;
            for (size_t c = (g0 + I) * G; c < (g0 + I + 1) * G; c += step) {
                // the rows ~32 KB on (rows are back to back), to L2: a decode
                // step streams the matrix once, and the hardware's
                // prefetchers alone left it far below the memory's rate; and
                // the rows two tiles on from L2 to L1 (each measured:
                // docs/bench-log/llama-cpp-kimi.md, "The trunk in integers,
                // and prefetching into L2" and "Scales, cold state and the
                // nibble span")
                const uint8_t* ahead = base + prefetch_rows * stride + c / 2;
                for (int k = 0; k < 4; ++k) {
                    _mm_prefetch(reinterpret_cast<const char*>(ahead + k * stride), _MM_HINT_T1);
                    _mm_prefetch(reinterpret_cast<const char*>(base + (8 + k) * stride + c / 2), _MM_HINT_T0);
                }
                if constexpr (Wide) {
                    const __m512i even = _mm512_loadu_si512(xq + c), odd = _mm512_loadu_si512(xq + c + chunk);
                    __m512i low[4], high[4];
                    for (int k = 0; k < 4; ++k) nibble_halves(base + k * stride, c, low[k], high[k]);
                    dot[I] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(dot[I], low[0], even), high[0], odd);
                    dot[4 + I] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(dot[4 + I], low[1], even), high[1], odd);
                    dot[8 + I] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(dot[8 + I], low[2], even), high[2], odd);
                    dot[12 + I] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(dot[12 + I], low[3], even), high[3], odd);
                    continue;
                }
                const __m512i x = _mm512_loadu_si512(xq + c);
                dot[I] = _mm512_dpbusd_epi32(dot[I], weight_codes<true>(base, c), x);
                dot[4 + I] = _mm512_dpbusd_epi32(dot[4 + I], weight_codes<true>(base + stride, c), x);
                dot[8 + I] = _mm512_dpbusd_epi32(dot[8 + I], weight_codes<true>(base + 2 * stride, c), x);
                dot[12 + I] = _mm512_dpbusd_epi32(dot[12 + I], weight_codes<true>(base + 3 * stride, c), x);
            }
        };
        pass.template operator()<0>();
        pass.template operator()<1>();
        pass.template operator()<2>();
        pass.template operator()<3>();
        // lanes 4k + i: group g0 + i's Σ xq and scale, row k's f16 scale of
        // it (masked loads: nothing past the last group is read)
        const __mmask8 present = static_cast<__mmask8>((1u << n) - 1);
        const __m512i sums = _mm512_broadcast_i32x4(_mm_maskz_loadu_epi32(present, xsum + g0));
        const __m512 token_scale = _mm512_broadcast_f32x4(_mm_maskz_loadu_ps(present, xs + g0));
        __m128i h[4];
        for (int k = 0; k < 4; ++k) h[k] = _mm_maskz_loadu_epi16(present, row_scales + (k * t.groups_per_row + g0) * 2);
        const __m256i halves = _mm256_set_m128i(_mm_unpacklo_epi64(h[2], h[3]), _mm_unpacklo_epi64(h[0], h[1]));
        const __m512i exact = _mm512_sub_epi32(int8_reduce16(dot), _mm512_slli_epi32(sums, 3));  // - b · Σ xq
        __m512 s = _mm512_mul_ps(_mm512_cvtph_ps(halves), token_scale);
        __asm__("" : "+v"(s));  // rounded, never fused
        __m512 product = _mm512_mul_ps(s, _mm512_cvtepi32_ps(exact));
        __asm__("" : "+v"(product));
        for (size_t i = 0; i < n; ++i) {  // group g0 + i of the 4 rows: lanes i, 4 + i, 8 + i, 12 + i
            const __m512i pick = _mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, static_cast<int>(12 + i),
                                                  static_cast<int>(8 + i), static_cast<int>(4 + i), static_cast<int>(i));
            acc = _mm_add_ps(acc, _mm512_castps512_ps128(_mm512_permutexvar_ps(pick, product)));
        }
    }
    alignas(16) float out[4];
    _mm_store_ps(out, acc);
    for (int k = 0; k < 4; ++k) y[token * ldy + r0 + k] = out[k];
}

// Row tiles of 4: blocks of 4 tokens as one 4 × 4 tile (each row's codes
// loaded once for four tokens), the tokens left one at a time (Q8G: over
// all the whole tiles' rows at once). Rows past the last whole tile take the
// scalar reference.
template <bool Q4, bool Wide = false>
size_t rows(const format::LoadedTensor& w, const TrunkInt8Input& in, float* y, size_t ldy, size_t row_begin, size_t row_end) {
    size_t r = row_begin;
    // a decode step's tiles fetch the scales rows_ahead rows on (token_tile);
    // the first tiles' own are fetched here, where the slice starts (this
    // shortened the engine's Q4G projections: docs/bench-log/llama-cpp-kimi.md,
    // "Scales, cold state and the nibble span")
    if constexpr (Q4)
        if (in.tokens % 4 != 0) prefetch_scales(w, row_begin, std::min(row_end, row_begin + rows_ahead(w.info->row_stride)));
    for (; r + 4 <= row_end; r += 4) {
        for (size_t k = 0; k + 4 <= in.tokens; k += 4) tile<Q4, Wide>(w, in, k, r, y, ldy);
        if constexpr (Q4)
            for (size_t k = in.tokens / 4 * 4; k < in.tokens; ++k) token_tile<Wide>(w, in, k, r, y, ldy);
    }
    if constexpr (!Q4)
        for (size_t k = in.tokens / 4 * 4; k < in.tokens; ++k) token_rows(w, in, k, row_begin, r, y, ldy);
    return r;
}

}  // namespace vnni
WASTE_TARGET_END

WASTE_TARGET_BEGIN("avx2,fma,f16c")

// AVX2 without VNNI: |x| times w carrying x's sign (vpsignb) in the
// pairwise byte multiply (at most 2 · 127 · 127: never saturates), pairs of
// int16 to int32 — Σ q · xq directly, no correction.
namespace avx2 {

// 32 signed weights q from stored column c of a row, in the inputs' order:
// Q8G's bytes; for Q4G, the inputs' order repeats every Span columns
// (evens, then odds), so the 32 at c are the low nibbles (the span's first
// half) or the high ones of 32 of the span's bytes, minus 8.
template <bool Q4, size_t Span>
inline __m256i weights(const uint8_t* row, size_t c) {
    if constexpr (Q4) {
        const size_t half = Span / 2, at = c % Span;
        const __m256i bytes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + c / Span * half + at % half));
        const __m256i nibbles = at < half ? bytes : _mm256_srli_epi16(bytes, 4);
        return _mm256_sub_epi8(_mm256_and_si256(nibbles, _mm256_set1_epi8(0x0F)), _mm256_set1_epi8(8));
    } else {
        return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + c));
    }
}

// The totals of 4 vectors' lanes, lane i of the result a[i]'s (integer
// adds: any order gives the same sums).
inline __m128i reduce4(const __m256i a[4]) {
    const __m256i g = _mm256_hadd_epi32(_mm256_hadd_epi32(a[0], a[1]), _mm256_hadd_epi32(a[2], a[3]));
    return _mm_add_epi32(_mm256_castsi256_si128(g), _mm256_extracti128_si256(g, 1));
}

// 4 rows × TB tokens (TB = 1 or 2): lane k·TB + j of the group's sums is row
// k, token j; then the reference's f32 steps lane by lane.
template <bool Q4, int TB, size_t Span>
void tile(const format::LoadedTensor& w, const TrunkInt8Input& in, size_t t0, size_t r0, float* y, size_t ldy) {
    constexpr int R = 4, N = R * TB;
    const format::TrunkTensor& t = *w.info;
    const size_t G = in.group, groups = in.groups;
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc = _mm256_setzero_ps();
    for (size_t g = 0; g < groups; ++g) {
        __m256i dot[N];
        for (int i = 0; i < N; ++i) dot[i] = _mm256_setzero_si256();
        for (size_t c = g * G; c < (g + 1) * G; c += 32) {
            // the first token block streams the rows: the rows two tiles on,
            // into L2, as the VNNI body does
            if (t0 == 0)
                for (int k = 0; k < R; ++k)
                    _mm_prefetch(reinterpret_cast<const char*>(w.payload.data() + (r0 + 8 + k) * t.row_stride + (Q4 ? c / 2 : c)),
                                 _MM_HINT_T1);
            __m256i x[TB], ax[TB];
            for (int j = 0; j < TB; ++j) {
                x[j] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in.q.data() + (t0 + j) * in.ld + c));
                ax[j] = _mm256_abs_epi8(x[j]);
            }
            for (int k = 0; k < R; ++k) {
                const __m256i q = weights<Q4, Span>(w.payload.data() + (r0 + k) * t.row_stride, c);
                for (int j = 0; j < TB; ++j)
                    dot[k * TB + j] = _mm256_add_epi32(dot[k * TB + j],
                                                       _mm256_madd_epi16(_mm256_maddubs_epi16(ax[j], _mm256_sign_epi8(q, x[j])), ones));
            }
        }
        __m256i sums;
        if constexpr (TB == 1) sums = _mm256_castsi128_si256(reduce4(dot));
        else sums = _mm256_set_m128i(reduce4(dot + 4), reduce4(dot));
        alignas(32) float scale[8] = {};
        for (int k = 0; k < R; ++k) {
            uint16_t bits;
            std::memcpy(&bits, w.scales.data() + ((r0 + k) * t.groups_per_row + g) * 2, 2);
            const float ws = _cvtsh_ss(bits);
            for (int j = 0; j < TB; ++j) scale[k * TB + j] = ws * in.scale[(t0 + j) * groups + g];  // rounded: a store
        }
        __m256 product = _mm256_mul_ps(_mm256_load_ps(scale), _mm256_cvtepi32_ps(sums));
        __asm__("" : "+x"(product));  // rounded, never fused
        acc = _mm256_add_ps(acc, product);
    }
    alignas(32) float out[8];
    _mm256_store_ps(out, acc);
    for (int k = 0; k < R; ++k)
        for (int j = 0; j < TB; ++j) y[(t0 + j) * ldy + r0 + k] = out[k * TB + j];
}

// Row tiles of 4: blocks of 2 tokens, a token left alone; rows past the last
// whole tile take the scalar reference.
template <bool Q4, size_t Span = chunk>
size_t rows(const format::LoadedTensor& w, const TrunkInt8Input& in, float* y, size_t ldy, size_t row_begin, size_t row_end) {
    size_t r = row_begin;
    for (; r + 4 <= row_end; r += 4) {
        size_t k = 0;
        for (; k + 2 <= in.tokens; k += 2) tile<Q4, 2, Span>(w, in, k, r, y, ldy);
        if (k < in.tokens) tile<Q4, 1, Span>(w, in, k, r, y, ldy);
    }
    return r;
}

}  // namespace avx2
WASTE_TARGET_END
#endif

}  // namespace

bool trunk_int8_eligible(const format::TrunkTensor& w) {
    return (w.fmt == TrunkFormat::q8g || w.fmt == TrunkFormat::q4g) && w.group % chunk == 0 && w.group <= max_group;
}

namespace {
// A token's room in TrunkInt8Input for up to `cols` columns, whatever the
// tensor's group: its quantised values padded to any group's multiple, and
// a scale and a sum for each group of the smallest size.
size_t input_ld(size_t cols) { return (cols + max_group - 1) / chunk * chunk; }
size_t input_groups(size_t cols) { return (cols + chunk - 1) / chunk; }
}  // namespace

size_t trunk_int8_input_bytes(size_t tokens, size_t cols) {
    return tokens * input_ld(cols) + tokens * input_groups(cols) * (sizeof(float) + sizeof(int32_t));
}

void TrunkInt8Input::reserve(size_t tokens_, size_t cols) {
    q.assign(tokens_ * input_ld(cols), 0);
    scale.assign(tokens_ * input_groups(cols), 0.0f);
    sum.assign(scale.size(), 0);
    capacity_tokens = tokens_;
    capacity_cols = cols;
}

void quantize_trunk_input(Isa isa, const format::TrunkTensor& w, const float* x, size_t ldx, size_t tokens, TrunkInt8Input& in) {
    WASTE_CHECK(trunk_int8_eligible(w) && tokens <= in.capacity_tokens && w.cols <= in.capacity_cols);
    const size_t cols = w.cols, G = w.group;
    in.tokens = tokens;
    in.group = G;
    in.groups = w.groups_per_row;
    in.ld = in.groups * G;
    in.nibble_span = w.fmt == TrunkFormat::q4g ? nibble_span(G) : 0;
    alignas(64) int8_t natural[max_group];
    for (size_t k = 0; k < tokens; ++k) {
        for (size_t g = 0; g < in.groups; ++g) {
            const size_t begin = g * G, count = std::min(cols, begin + G) - begin;
            in.scale[k * in.groups + g] = quantize_int8_values(isa, x + k * ldx + begin, count, natural);
            std::memset(natural + count, 0, G - count);
            in.sum[k * in.groups + g] = int8_byte_sum(isa, natural, G);
            int8_t* out = in.q.data() + k * in.ld + begin;
            if (!in.nibble_span) {
                std::memcpy(out, natural, G);
                continue;
            }
            // nibble_position span by span, written out: with its run-time
            // span's divisions per column (or as a loop over a compile-time
            // span) the engine's projections took longer
            // (docs/bench-log/llama-cpp-kimi.md, "Scales, cold state and the
            // nibble span")
            const size_t span = in.nibble_span, half = span / 2;
            for (size_t base = 0; base < G; base += span)
                for (size_t i = 0; i < half; ++i) {
                    out[base + i] = natural[base + 2 * i];
                    out[base + half + i] = natural[base + 2 * i + 1];
                }
        }
    }
}

void trunk_int8_rows(Isa isa, const format::LoadedTensor& w, const TrunkInt8Input& in, float* y, size_t ldy, size_t row_begin,
                     size_t row_end) {
    size_t done = row_begin;
#if WASTE_X86_SIMD
    const bool q4 = w.info->fmt == TrunkFormat::q4g;
    const bool wide = in.nibble_span == 2 * chunk;
    if (isa == Isa::avx512 && int8_vnni_path())
        done = !q4    ? vnni::rows<false>(w, in, y, ldy, row_begin, row_end)
               : wide ? vnni::rows<true, true>(w, in, y, ldy, row_begin, row_end)
                      : vnni::rows<true>(w, in, y, ldy, row_begin, row_end);
    else if ((isa == Isa::avx2 || isa == Isa::avx512) && isa_runs(Isa::avx2))
        done = !q4    ? avx2::rows<false>(w, in, y, ldy, row_begin, row_end)
               : wide ? avx2::rows<true, 2 * chunk>(w, in, y, ldy, row_begin, row_end)
                      : avx2::rows<true>(w, in, y, ldy, row_begin, row_end);
#else
    (void)isa;
#endif
    rows_scalar(w, in, y, ldy, done, row_end);
}

void trunk_int8_matmul(platform::ThreadPool& pool, const format::LoadedTensor& w, const float* x, size_t ldx, size_t tokens,
                       float* y, size_t ldy, TrunkInt8Input& in) {
    const Isa isa = active_isa();
    quantize_trunk_input(isa, *w.info, x, ldx, tokens, in);
    const size_t rows = w.info->rows;
    if (rows * w.info->cols * tokens < 32768) {  // not worth a parallel region
        trunk_int8_rows(isa, w, in, y, ldy, 0, rows);
        return;
    }
    pool.parallel_for(rows, [&](size_t begin, size_t end) { trunk_int8_rows(isa, w, in, y, ldy, begin, end); }, row_grain);
}

}  // namespace waste::kernels
