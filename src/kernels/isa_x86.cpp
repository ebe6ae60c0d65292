// isa_x86.cpp — the x86 SIMD variants of the trunk matvec and the VQ
// lookup-table build and apply (models.md §4–§5).
//
// Compiled with the project's one flag set: each variant sits in a
// `#pragma GCC target` region, and the dispatch below only calls it when
// best_isa() says the CPU has it. The AVX-512 bodies live in
// isa_avx512.inc, which the kernel test also compiles over portable
// intrinsics (SIMDe) to check them on machines without AVX-512.
//
// Precision (tests/kernels_test.cpp checks each against the scalar reference):
// * trunk matvec: another summation order and FMA — within 1e-5 of Σ|w·x|;
// * VQ table build and apply: the scalar reference's bits exactly (the same
//   operations per entry / per row, only side by side in vector lanes or
//   rows in flight);
// * trunk matmul and VQ matmul (prefill chunks): another summation order and
//   FMA — within 1e-5 of Σ|w·x|. The AVX2 bodies also serve AVX-512 CPUs.
#include "kernels/isa_kernels.h"

#if WASTE_X86_SIMD

#include <immintrin.h>

#include "platform/target_region.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "format/f16.h"
#include "kernels/int8_matmul.h"
#include "kernels/vq_int8_build.h"
#include "platform/thread_scratch.h"

// GCC 12 warns inside its own AVX-512 headers (_mm512_undefined_* used as
// the pass-through of unmasked intrinsics): a known false positive.
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)  // a GCC-only warning
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace waste::kernels {

namespace {

using format::TrunkFormat;

WASTE_TARGET_BEGIN("avx2,fma,f16c")

namespace avx2 {

// An optimisation barrier: the product is materialised, so it cannot be
// fused into the following add (fp-contract would otherwise make an FMA).
#define WASTE_KEEP(v) __asm__("" : "+x"(v))

inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}

inline __m256i lanes_below(size_t n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(std::min<size_t>(n, 8))),
                              _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// 8 quantised values of a row from element i (a multiple of 8, inside the
// row's whole groups), as floats.
template <TrunkFormat F>
inline __m256 decode8(const uint8_t* row, size_t i) {
    if constexpr (F == TrunkFormat::q8g) {
        const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(row + i));
        return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b));
    } else if constexpr (F == TrunkFormat::q4g) {
        uint32_t word;
        std::memcpy(&word, row + i / 2, 4);
        const __m256i shift = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
        const __m256i q =
            _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(word)), shift), _mm256_set1_epi32(15));
        return _mm256_cvtepi32_ps(_mm256_sub_epi32(q, _mm256_set1_epi32(8)));
    } else {
        // 8 values = 24 bits from byte 3i/8 (the 4-byte read ends at most on
        // the row's guard byte)
        uint32_t word;
        std::memcpy(&word, row + i / 8 * 3, 4);
        const __m256i shift = _mm256_setr_epi32(0, 3, 6, 9, 12, 15, 18, 21);
        const __m256i q =
            _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(word)), shift), _mm256_set1_epi32(7));
        return _mm256_cvtepi32_ps(_mm256_sub_epi32(q, _mm256_set1_epi32(4)));
    }
}

// R consecutive rows from r0; each row's arithmetic is the same whatever R
// is, so neither the thread split nor the grouping changes a bit.
template <TrunkFormat F, int R>
inline void trunk_rows(const TrunkView& t, const float* x, float* y, size_t r0) {
    const size_t cols = t.cols;
    const uint8_t* row[R];
    for (int k = 0; k < R; ++k) row[k] = t.payload + (r0 + k) * t.row_stride;
    if constexpr (F == TrunkFormat::f32) {
        __m256 a0[R], a1[R];
        for (int k = 0; k < R; ++k) a0[k] = a1[k] = _mm256_setzero_ps();
        size_t c = 0;
        for (; c + 16 <= cols; c += 16) {
            const __m256 x0 = _mm256_loadu_ps(x + c), x1 = _mm256_loadu_ps(x + c + 8);
            for (int k = 0; k < R; ++k) {
                const float* w = reinterpret_cast<const float*>(row[k]);
                a0[k] = _mm256_fmadd_ps(_mm256_loadu_ps(w + c), x0, a0[k]);
                a1[k] = _mm256_fmadd_ps(_mm256_loadu_ps(w + c + 8), x1, a1[k]);
            }
        }
        if (c + 8 <= cols) {
            const __m256 x0 = _mm256_loadu_ps(x + c);
            for (int k = 0; k < R; ++k)
                a0[k] = _mm256_fmadd_ps(_mm256_loadu_ps(reinterpret_cast<const float*>(row[k]) + c), x0, a0[k]);
            c += 8;
        }
        if (c < cols) {
            const __m256i m = lanes_below(cols - c);
            const __m256 x1 = _mm256_maskload_ps(x + c, m);
            for (int k = 0; k < R; ++k)
                a1[k] = _mm256_fmadd_ps(_mm256_maskload_ps(reinterpret_cast<const float*>(row[k]) + c, m), x1, a1[k]);
        }
        for (int k = 0; k < R; ++k) y[r0 + k] = hsum(_mm256_add_ps(a0[k], a1[k]));
    } else {
        const size_t group = t.group;
        __m256 total[R];
        for (int k = 0; k < R; ++k) total[k] = _mm256_setzero_ps();
        for (size_t g = 0; g < t.groups_per_row; ++g) {
            const size_t begin = g * group, n = std::min(group, cols - begin);
            __m256 acc[R];
            for (int k = 0; k < R; ++k) acc[k] = _mm256_setzero_ps();
            size_t i = 0;
            for (; i + 8 <= n; i += 8) {
                const __m256 xv = _mm256_loadu_ps(x + begin + i);
                for (int k = 0; k < R; ++k) acc[k] = _mm256_fmadd_ps(decode8<F>(row[k], begin + i), xv, acc[k]);
            }
            if (i < n) {
                // last group of the row: masked x makes the padding count 0
                const __m256 xv = _mm256_maskload_ps(x + begin + i, lanes_below(n - i));
                for (int k = 0; k < R; ++k) acc[k] = _mm256_fmadd_ps(decode8<F>(row[k], begin + i), xv, acc[k]);
            }
            for (int k = 0; k < R; ++k) {
                uint16_t bits;
                std::memcpy(&bits, t.scales + ((r0 + k) * t.groups_per_row + g) * 2, 2);
                total[k] = _mm256_fmadd_ps(_mm256_set1_ps(format::f16_to_f32(bits)), acc[k], total[k]);
            }
        }
        for (int k = 0; k < R; ++k) y[r0 + k] = hsum(total[k]);
    }
}

template <TrunkFormat F>
inline void trunk_range(const TrunkView& t, const float* x, float* y, size_t row_begin, size_t row_end) {
    size_t r = row_begin;
    for (; r + 4 <= row_end; r += 4) trunk_rows<F, 4>(t, x, y, r);
    for (; r < row_end; ++r) trunk_rows<F, 1>(t, x, y, r);
}

// ---- trunk matmul (prefill): Y[t][r] = Σ_c W[r][c] X[t][c]
//
// Rows are dequantised a few at a time into an f32 tile (w = scale·q: an f16
// scale times a small integer is exact in f32), and every token of the chunk
// is dotted with the tile from L1: R rows × TB tokens of 8-lane
// accumulators. Each (token, row) is summed in one fixed order (8 lanes
// along the columns, then a horizontal sum) whatever R, TB or the thread
// split, so thread counts never change a bit.
constexpr size_t tile_rows = 4;

template <TrunkFormat F>
inline void decode_row(const TrunkView& t, size_t r, float* out) {
    const uint8_t* row = t.payload + r * t.row_stride;
    const size_t cols = t.cols;
    if constexpr (F == TrunkFormat::f32) {
        std::memcpy(out, row, cols * sizeof(float));
    } else {
        for (size_t g = 0; g < t.groups_per_row; ++g) {
            const size_t begin = g * t.group, n = std::min(t.group, cols - begin);
            uint16_t bits;
            std::memcpy(&bits, t.scales + (r * t.groups_per_row + g) * 2, 2);
            const __m256 scale = _mm256_set1_ps(format::f16_to_f32(bits));
            // whole vectors, the last one reading past n exactly as the
            // matvec does (its lanes meet a masked x)
            for (size_t i = 0; i < n; i += 8) _mm256_storeu_ps(out + begin + i, _mm256_mul_ps(decode8<F>(row, begin + i), scale));
        }
    }
}

template <int R, int TB>
inline void tile_dot(const float* tile, size_t ld_tile, size_t cols, const float* x, size_t ldx, float* y, size_t ldy,
                     size_t r0, size_t t0) {
    __m256 acc[R][TB];
    for (int k = 0; k < R; ++k)
        for (int j = 0; j < TB; ++j) acc[k][j] = _mm256_setzero_ps();
    size_t c = 0;
    for (; c + 8 <= cols; c += 8) {
        __m256 xv[TB];
        for (int j = 0; j < TB; ++j) xv[j] = _mm256_loadu_ps(x + (t0 + j) * ldx + c);
        for (int k = 0; k < R; ++k) {
            const __m256 w = _mm256_loadu_ps(tile + k * ld_tile + c);
            for (int j = 0; j < TB; ++j) acc[k][j] = _mm256_fmadd_ps(w, xv[j], acc[k][j]);
        }
    }
    if (c < cols) {
        const __m256i m = lanes_below(cols - c);
        __m256 xv[TB];
        for (int j = 0; j < TB; ++j) xv[j] = _mm256_maskload_ps(x + (t0 + j) * ldx + c, m);
        for (int k = 0; k < R; ++k) {
            // the tile's tail lanes hold decoded padding: masked too, so a
            // zero x lane never meets a NaN
            const __m256 w = _mm256_maskload_ps(tile + k * ld_tile + c, m);
            for (int j = 0; j < TB; ++j) acc[k][j] = _mm256_fmadd_ps(w, xv[j], acc[k][j]);
        }
    }
    for (int k = 0; k < R; ++k)
        for (int j = 0; j < TB; ++j) y[(t0 + j) * ldy + r0 + k] = hsum(acc[k][j]);
}

template <int R>
inline void tile_tokens(const float* tile, size_t ld_tile, size_t cols, const float* x, size_t ldx, size_t tokens, float* y,
                        size_t ldy, size_t r0) {
    size_t t = 0;
    for (; t + 3 <= tokens; t += 3) tile_dot<R, 3>(tile, ld_tile, cols, x, ldx, y, ldy, r0, t);
    if (tokens - t == 2) tile_dot<R, 2>(tile, ld_tile, cols, x, ldx, y, ldy, r0, t);
    else if (tokens - t == 1) tile_dot<R, 1>(tile, ld_tile, cols, x, ldx, y, ldy, r0, t);
}

// How a tile is laid out and dotted: its row stride for `cols` columns, the
// scratch floats it needs beyond tile_rows rows to start where it must, and
// the dot of its first n (≤ tile_rows) rows with every token. These are the
// 8-lane kernels; the AVX-512 region has 16-lane ones (avx512::Tiles16) and
// runs the decoding loops below through them.
struct Tiles8 {
    static size_t ld(size_t cols) { return (cols + 7) / 8 * 8 + 8; }
    static constexpr size_t slack = 0;
    static float* start(float* scratch) { return scratch; }
    static void dot(size_t n, const float* tile, size_t ld_tile, size_t cols, const float* x, size_t ldx, size_t tokens,
                    float* y, size_t ldy, size_t r) {
        switch (n) {
            case 4: tile_tokens<4>(tile, ld_tile, cols, x, ldx, tokens, y, ldy, r); break;
            case 3: tile_tokens<3>(tile, ld_tile, cols, x, ldx, tokens, y, ldy, r); break;
            case 2: tile_tokens<2>(tile, ld_tile, cols, x, ldx, tokens, y, ldy, r); break;
            default: tile_tokens<1>(tile, ld_tile, cols, x, ldx, tokens, y, ldy, r); break;
        }
    }
};

template <class Tiles, TrunkFormat F>
void matmul_range(const TrunkView& t, const float* x, size_t ldx, size_t tokens, float* y, size_t ldy, size_t row_begin,
                  size_t row_end, float* scratch) {
    const size_t ld_tile = Tiles::ld(t.cols);
    float* tile = Tiles::start(scratch);
    for (size_t r = row_begin; r < row_end; r += tile_rows) {
        const size_t n = std::min(tile_rows, row_end - r);
        for (size_t k = 0; k < n; ++k) decode_row<F>(t, r + k, tile + k * ld_tile);
        Tiles::dot(n, tile, ld_tile, t.cols, x, ldx, tokens, y, ldy, r);
    }
}

template <class Tiles>
size_t matmul_tile_floats(const TrunkView& t) { return tile_rows * Tiles::ld(t.cols) + Tiles::slack; }

bool dequantize_rows(const TrunkView& t, size_t row_begin, size_t n, float* out, size_t ld) {
    if (t.fmt != TrunkFormat::f32 && (t.group == 0 || t.group % 8 != 0)) return false;
    for (size_t k = 0; k < n; ++k) {
        float* row = out + k * ld;
        switch (t.fmt) {
            case TrunkFormat::f32: decode_row<TrunkFormat::f32>(t, row_begin + k, row); break;
            case TrunkFormat::q8g: decode_row<TrunkFormat::q8g>(t, row_begin + k, row); break;
            case TrunkFormat::q4g: decode_row<TrunkFormat::q4g>(t, row_begin + k, row); break;
            case TrunkFormat::q3g: decode_row<TrunkFormat::q3g>(t, row_begin + k, row); break;
        }
    }
    return true;
}

// ---- VQ matmul (prefill, kernels/vq_matmul.h): a few rows at a time are
// dequantised into an f32 tile (a position's 8 weights summed from the stage
// codebooks, ((0 + C_0) + C_1) + …), then every token routed to the expert
// is dotted with the tile from L1 by the trunk matmul's tile_dot, and each
// (token, row) sum is scaled once. Dequantising first keeps the codebooks
// and the rows' index lines as the working set of the first step, and the
// tile and a few tokens' x as that of the second. The earlier kernel summed
// the codebook entries inside the token loop (the codebooks and six tokens'
// x together overflow L1): slower at one token per expert and more so at 8,
// same bits (docs/bench-log/decode-and-prefill.md, "Decode and prefill on the
// Zen 5"). Per (token, row) the sum is 8 lanes of fmas along the positions, a
// horizontal sum, times the row scale.
// S: the stage count when known at compile time (1-4; VQ4P: 4), else 0.
template <bool P6, int S>
inline __m256 vq_weights(const uint8_t* p, const float* books, size_t stages, size_t book_floats) {
    unsigned word = 0;
    if constexpr (P6) word = p[0] | static_cast<unsigned>(p[1]) << 8 | static_cast<unsigned>(p[2]) << 16;
    __m256 w = _mm256_setzero_ps();
    const size_t n = S ? S : stages;
#pragma GCC unroll 4
    for (size_t s = 0; s < n; ++s) {
        const unsigned e = P6 ? (word >> (6 * s)) & 63u : p[s];
        w = _mm256_add_ps(w, _mm256_loadu_ps(books + s * book_floats + e * 8));
    }
    return w;
}

// Rows r..r+n-1 into the tile, position by position (the rows of one 64-row
// block keep a position's index bytes side by side, so they share its line).
template <bool P6, int S>
inline void dequantise_vq_rows(const VqTableShape& shape, const uint8_t* indices, const float* books, size_t r, size_t n,
                               float* tile, size_t ld_tile) {
    const size_t positions = shape.positions, stages = shape.stages, book_floats = static_cast<size_t>(shape.entries) * 8;
    const size_t bytes = P6 ? 3 : stages;
    const uint8_t* p[tile_rows];
    for (size_t k = 0; k < n; ++k) p[k] = indices + ((r + k) / 64 * positions * 64 + (r + k) % 64) * bytes;
    for (size_t v = 0; v < positions; ++v)
        for (size_t k = 0; k < n; ++k)
            _mm256_storeu_ps(tile + k * ld_tile + v * 8, vq_weights<P6, S>(p[k] + v * 64 * bytes, books, stages, book_floats));
}

template <class Tiles, bool P6, int S>
void vq_matmul_range(const VqTableShape& shape, const uint8_t* indices, const uint8_t* scales_f16, const float* books,
                     const float* x, size_t ldx, size_t tokens, float* y, size_t ldy, size_t row_begin, size_t row_end) {
    const size_t cols = static_cast<size_t>(shape.positions) * 8, ld_tile = Tiles::ld(cols);
    float* tile =
        Tiles::start(platform::thread_scratch(platform::ScratchSlot::vq_tile, tile_rows * ld_tile + Tiles::slack));
    for (size_t r = row_begin; r < row_end; r += tile_rows) {
        const size_t n = std::min(tile_rows, row_end - r);
        dequantise_vq_rows<P6, S>(shape, indices, books, r, n, tile, ld_tile);
        Tiles::dot(n, tile, ld_tile, cols, x, ldx, tokens, y, ldy, r);
        for (size_t k = 0; k < n; ++k) {
            uint16_t bits;
            std::memcpy(&bits, scales_f16 + 2 * (r + k), 2);
            const float scale = format::f16_to_f32(bits);
            for (size_t t = 0; t < tokens; ++t) y[t * ldy + r + k] = scale * y[t * ldy + r + k];
        }
    }
}

template <class Tiles>
bool vq_matmul_rows(const VqTableShape& shape, bool packed6, const uint8_t* indices, const uint8_t* scales_f16,
                    const float* books, const float* x, size_t ldx, size_t tokens, float* y, size_t ldy, size_t row_begin,
                    size_t row_end) {
    if (shape.vec_dim != 8 || (packed6 && shape.stages != 4)) return false;
    const auto run = [&]<bool P6, int S>() {
        vq_matmul_range<Tiles, P6, S>(shape, indices, scales_f16, books, x, ldx, tokens, y, ldy, row_begin, row_end);
    };
    if (packed6) run.template operator()<true, 4>();
    else if (shape.stages == 3) run.template operator()<false, 3>();
    else if (shape.stages == 2) run.template operator()<false, 2>();
    else run.template operator()<false, 0>();
    return true;
}

template <class Tiles>
bool matmul_rows(const TrunkView& t, const float* x, size_t ldx, size_t tokens, float* y, size_t ldy, size_t row_begin,
                 size_t row_end, float* scratch) {
    if (t.fmt != TrunkFormat::f32 && (t.group == 0 || t.group % 8 != 0)) return false;
    switch (t.fmt) {
        case TrunkFormat::f32: matmul_range<Tiles, TrunkFormat::f32>(t, x, ldx, tokens, y, ldy, row_begin, row_end, scratch); return true;
        case TrunkFormat::q8g: matmul_range<Tiles, TrunkFormat::q8g>(t, x, ldx, tokens, y, ldy, row_begin, row_end, scratch); return true;
        case TrunkFormat::q4g: matmul_range<Tiles, TrunkFormat::q4g>(t, x, ldx, tokens, y, ldy, row_begin, row_end, scratch); return true;
        case TrunkFormat::q3g: matmul_range<Tiles, TrunkFormat::q3g>(t, x, ldx, tokens, y, ldy, row_begin, row_end, scratch); return true;
    }
    return false;
}

bool matvec_rows(const TrunkView& t, const float* x, float* y, size_t row_begin, size_t row_end) {
    if (t.fmt != TrunkFormat::f32 && (t.group == 0 || t.group % 8 != 0)) return false;
    switch (t.fmt) {
        case TrunkFormat::f32: trunk_range<TrunkFormat::f32>(t, x, y, row_begin, row_end); return true;
        case TrunkFormat::q8g: trunk_range<TrunkFormat::q8g>(t, x, y, row_begin, row_end); return true;
        case TrunkFormat::q4g: trunk_range<TrunkFormat::q4g>(t, x, y, row_begin, row_end); return true;
        case TrunkFormat::q3g: trunk_range<TrunkFormat::q3g>(t, x, y, row_begin, row_end); return true;
    }
    return false;
}

// VQ table build: 16 entries side by side (two vectors), lane l computing
// ((0 + x0·c0) + x1·c1) + … for entry e0+l — the scalar reference's
// operations, products rounded before the add.
bool build_table(const VqTableShape& shape, const float* books, const float* x, float* table) {
    const size_t positions = shape.positions, stages = shape.stages, entries = shape.entries, dim = shape.vec_dim;
    if (dim == 0 || dim > 64) return false;
    alignas(32) float ct[64 * 16];
    for (size_t s = 0; s < stages; ++s) {
        const float* book = books + s * entries * dim;
        for (size_t e0 = 0; e0 < entries; e0 += 16) {
            const size_t n = std::min<size_t>(16, entries - e0);
            for (size_t j = 0; j < dim; ++j)
                for (size_t l = 0; l < 16; ++l) ct[j * 16 + l] = l < n ? book[(e0 + l) * dim + j] : 0.0f;
            const __m256i m0 = lanes_below(n), m1 = lanes_below(n > 8 ? n - 8 : 0);
            for (size_t v = 0; v < positions; ++v) {
                const float* xv = x + v * dim;
                __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
                for (size_t j = 0; j < dim; ++j) {
                    const __m256 xj = _mm256_broadcast_ss(xv + j);
                    __m256 p0 = _mm256_mul_ps(xj, _mm256_load_ps(ct + j * 16));
                    __m256 p1 = _mm256_mul_ps(xj, _mm256_load_ps(ct + j * 16 + 8));
                    WASTE_KEEP(p0);
                    WASTE_KEEP(p1);
                    acc0 = _mm256_add_ps(acc0, p0);
                    acc1 = _mm256_add_ps(acc1, p1);
                }
                float* out = table + (v * stages + s) * entries + e0;
                if (n == 16) {
                    _mm256_storeu_ps(out, acc0);
                    _mm256_storeu_ps(out + 8, acc1);
                } else {
                    _mm256_maskstore_ps(out, m0, acc0);
                    _mm256_maskstore_ps(out + 8, m1, acc1);
                }
            }
        }
    }
    return true;
}

// VQ table apply. K: 1..4 = stages with one index byte each; 6 = VQ4P (four
// 6-bit indices in 3 bytes); 0 = any other stage count.
//
// Scalar loads, not vpgatherdd: on Zen 3 (the development machine) an 8-lane
// gather costs more than eight scalar loads. Eight or sixteen rows are kept in
// flight, each in its own register, so the adds of one row (a serial chain,
// in the reference's order) overlap with the others'. The index bytes of
// those rows at one position are contiguous (8·bytes of them): they are read
// as 64-bit words and split with shifts, which moves the index reads off the
// load ports (one table load per lookup is what is left there).
//
// The region is compiled without SLP vectorisation: GCC otherwise packs the
// row accumulators into one ymm and assembles each vector of eight table
// values with inserts and shuffles, which measured slower in the engine's
// access pattern (docs/bench-log/kernels.md, "VQ expert matvec (lookup
// tables)"). GCC only: clang has no such switch per region.
#if !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("no-tree-slp-vectorize")
#endif

template <int K>
constexpr size_t index_bytes = K == 6 ? 3 : K;  // per (row, position); K > 0
template <int K>
constexpr size_t index_stages = K == 6 ? 4 : K;

template <int K>
inline unsigned stage_index(const uint8_t* p, size_t s) {
    if constexpr (K == 6) {
        const unsigned word = p[0] | static_cast<unsigned>(p[1]) << 8 | static_cast<unsigned>(p[2]) << 16;
        return (word >> (6 * s)) & 63u;
    } else {
        return p[s];
    }
}

// Stage S of row k among rows whose index bytes are the little-endian words w.
template <int K, int k, int S>
inline unsigned word_index(const uint64_t* w) {
    if constexpr (K == 6) {
        constexpr int bit = 24 * k + 6 * S, lo = bit / 64, off = bit % 64;
        if constexpr (off > 58) return static_cast<unsigned>((w[lo] >> off) | (w[lo + 1] << (64 - off))) & 63u;
        else return static_cast<unsigned>(w[lo] >> off) & 63u;
    } else {
        constexpr int byte = k * K + S;
        return static_cast<unsigned>(w[byte / 8] >> (byte % 8 * 8)) & 255u;
    }
}

template <int K, int S, class Acc, class T, int... k>
inline void add_stage(Acc* acc, const T* t, const uint64_t* w, std::integer_sequence<int, k...>) {
    ((acc[k] += t[word_index<K, k, S>(w)]), ...);
}

template <int K, int R, class Acc, class T, int... S>
inline void add_position(Acc* acc, const T* t, size_t entries, const uint64_t* w, std::integer_sequence<int, S...>) {
    (add_stage<K, S>(acc, t + S * entries, w, std::make_integer_sequence<int, R>{}), ...);
}

// Adds the lookups of R rows over positions [v0, v1) to acc (f32 sums over
// the f32 table, or int32 sums over the int8 one), each row in the
// reference's order: position by position, stage by stage. R = 8 or 16 read
// the indices as words (K > 0); R = 1 (and K = 0) byte by byte.
template <int K, int R, class Acc, class T>
inline void add_lookups(Acc* acc, const uint8_t* block_idx, size_t in_block, size_t stages, size_t entries, size_t bytes,
                        size_t per_position, const T* table, size_t v0, size_t v1) {
    if constexpr (K != 0 && R % 8 == 0) {
        constexpr size_t words = index_bytes<K> * R / 8;
        for (size_t v = v0; v < v1; ++v) {
            const uint8_t* p = block_idx + (v * 64 + in_block) * index_bytes<K>;
            uint64_t w[words];
#pragma GCC unroll 8
            for (size_t i = 0; i < words; ++i) std::memcpy(&w[i], p + 8 * i, 8);
            add_position<K, R>(acc, table + v * per_position, entries, w,
                               std::make_integer_sequence<int, static_cast<int>(index_stages<K>)>{});
        }
    } else {
        const size_t n_stages = K == 0 ? stages : index_stages<K>;
        for (size_t v = v0; v < v1; ++v) {
            const uint8_t* p = block_idx + (v * 64 + in_block) * bytes;
            const T* t = table + v * per_position;
            for (int k = 0; k < R; ++k)
                for (size_t s = 0; s < n_stages; ++s) acc[k] += t[s * entries + stage_index<K>(p + k * bytes, s)];
        }
    }
}

// R consecutive rows of one 64-row block over positions [v0, v1): partial
// sums enter from y (v0 > 0) and leave to y, scaled once the last position
// is in (one rounding, as in the scalar reference).
template <int K, int R>
inline void apply_rows(const uint8_t* block_idx, size_t in_block, size_t stages, size_t entries, size_t bytes,
                       size_t per_position, const float* table, size_t v0, size_t v1, bool last, const uint8_t* scales_f16,
                       float* y, size_t r0) {
    float acc[R];
#pragma GCC unroll 16
    for (int k = 0; k < R; ++k) acc[k] = v0 == 0 ? 0.0f : y[r0 + k];
    add_lookups<K, R>(acc, block_idx, in_block, stages, entries, bytes, per_position, table, v0, v1);
#pragma GCC unroll 16
    for (int k = 0; k < R; ++k) {
        if (!last) {
            y[r0 + k] = acc[k];
            continue;
        }
        uint16_t bits;
        std::memcpy(&bits, scales_f16 + 2 * (r0 + k), 2);
        y[r0 + k] = format::f16_to_f32(bits) * acc[k];
    }
}

// The table is walked in chunks of positions small enough to stay in L1
// (~12 KiB: 4 positions of a 3 × 256 table; gate/up tables of a large expert
// are megabytes); each chunk runs over every row of the range. Between chunks
// a row's partial sum waits in y (stored and reloaded exactly). The index
// bytes of a 64-row block sit [position][row][stage], so each block is a
// stream advancing one chunk at a time: the chunk two ahead is prefetched
// (the hardware prefetcher does not follow eight interleaved streams that
// jump between pages; measured faster on decode-shaped work, expert records
// in DRAM: docs/bench-log/kernels.md, "VQ expert matvec (lookup tables)").
inline size_t chunk_positions(size_t per_position_floats) {
    return std::max<size_t>(1, 3072 / std::max<size_t>(1, per_position_floats));
}
constexpr size_t prefetch_chunks_ahead = 2;

// Walks rows [row_begin, row_end) over the positions in chunks of `chunk`,
// calling rows.template operator()<R>(block_idx, in_block, r, v0, v1, last)
// for R = 16 or 8 rows at a time (K > 0) and single rows, block by block;
// prefetches each block's index bytes ahead_chunks chunks ahead.
template <int K, class Rows>
inline void walk_rows(const VqTableShape& shape, const uint8_t* indices, size_t chunk, size_t ahead_chunks, size_t row_begin,
                      size_t row_end, Rows&& rows) {
    const size_t positions = shape.positions;
    const size_t bytes = K == 0 ? static_cast<size_t>(shape.stages) : index_bytes<K>;  // per (row, position)
    for (size_t v0 = 0; v0 < positions || v0 == 0; v0 += chunk) {
        const size_t v1 = std::min(positions, v0 + chunk);
        const bool last = v1 == positions;
        const size_t ahead = v0 + ahead_chunks * chunk;
        for (size_t block = row_begin / 64; block * 64 < row_end; ++block) {
            const size_t base = block * 64;
            const size_t lo = std::max(row_begin, base), hi = std::min(row_end, base + 64);
            const uint8_t* block_idx = indices + block * positions * 64 * bytes;
            if (ahead < positions) {
                const uint8_t* from = block_idx + ahead * 64 * bytes;
                const size_t n = (std::min(positions, ahead + chunk) - ahead) * 64 * bytes;
                for (size_t o = 0; o < n; o += 64) _mm_prefetch(reinterpret_cast<const char*>(from + o), _MM_HINT_T0);
            }
            size_t r = lo;
            if constexpr (K != 0)
                for (; r + 16 <= hi; r += 16) rows.template operator()<16>(block_idx, r - base, r, v0, v1, last);
            for (; r + 8 <= hi; r += 8) rows.template operator()<8>(block_idx, r - base, r, v0, v1, last);
            for (; r < hi; ++r) rows.template operator()<1>(block_idx, r - base, r, v0, v1, last);
        }
        if (last) break;
    }
}

template <int K>
void apply_range(const VqTableShape& shape, const uint8_t* indices, const uint8_t* scales_f16, const float* table,
                 float* y, size_t row_begin, size_t row_end) {
    const size_t entries = shape.entries, stages = shape.stages;
    const size_t bytes = K == 0 ? stages : index_bytes<K>;
    const size_t per_position = stages * entries;  // table floats
    walk_rows<K>(shape, indices, chunk_positions(per_position), prefetch_chunks_ahead, row_begin, row_end,
                 [&]<int R>(const uint8_t* block_idx, size_t in_block, size_t r, size_t v0, size_t v1, bool last) {
                     apply_rows<K, R>(block_idx, in_block, stages, entries, bytes, per_position, table, v0, v1, last,
                                      scales_f16, y, r);
                 });
}

// ---- the approximate int8 mode (vq_lut.h, apply_vq_table_int8): the same
// walk over an int8 table. A row's lookups are summed exactly in int32 within
// each vq_int8_block of positions (one chunk: 24 KiB of a 3 × 256 table),
// then block_scale · float(sum) is added to its f32 sum (product rounded,
// never fused) — the scalar reference's operations, so its bits.
template <int K, int R>
inline void apply_rows_int8(const uint8_t* block_idx, size_t in_block, size_t stages, size_t entries, size_t bytes,
                            size_t per_position, const int8_t* q, float block_scale, size_t v0, size_t v1, bool last,
                            const uint8_t* scales_f16, float* y, size_t r0) {
    int32_t sum[R];
#pragma GCC unroll 16
    for (int k = 0; k < R; ++k) sum[k] = 0;
    add_lookups<K, R>(sum, block_idx, in_block, stages, entries, bytes, per_position, q, v0, v1);
#pragma GCC unroll 16
    for (int k = 0; k < R; ++k) {
        float part = block_scale * static_cast<float>(sum[k]);
        WASTE_KEEP(part);
        const float acc = (v0 == 0 ? 0.0f : y[r0 + k]) + part;
        if (!last) {
            y[r0 + k] = acc;
            continue;
        }
        uint16_t bits;
        std::memcpy(&bits, scales_f16 + 2 * (r0 + k), 2);
        y[r0 + k] = format::f16_to_f32(bits) * acc;
    }
}

template <int K>
void apply_range_int8(const VqTableShape& shape, const uint8_t* indices, const uint8_t* scales_f16, const int8_t* q,
                      const float* block_scales, float* y, size_t row_begin, size_t row_end) {
    const size_t entries = shape.entries, stages = shape.stages;
    const size_t bytes = K == 0 ? stages : index_bytes<K>;
    const size_t per_position = stages * entries;
    // one chunk per int8 block; the next one's indices prefetched
    walk_rows<K>(shape, indices, vq_int8_block, 1, row_begin, row_end,
                 [&]<int R>(const uint8_t* block_idx, size_t in_block, size_t r, size_t v0, size_t v1, bool last) {
                     apply_rows_int8<K, R>(block_idx, in_block, stages, entries, bytes, per_position, q,
                                           block_scales[v0 / vq_int8_block], v0, v1, last, scales_f16, y, r);
                 });
}

#if !defined(__clang__)
#pragma GCC pop_options
#endif

bool apply_table(const VqTableShape& shape, bool packed6, const uint8_t* indices, const uint8_t* scales_f16,
                 const float* table, float* y, size_t row_begin, size_t row_end) {
    if (row_begin >= row_end) return true;
    if (packed6) {
        if (shape.stages != 4) return false;
        apply_range<6>(shape, indices, scales_f16, table, y, row_begin, row_end);
        return true;
    }
    switch (shape.stages) {
        case 1: apply_range<1>(shape, indices, scales_f16, table, y, row_begin, row_end); return true;
        case 2: apply_range<2>(shape, indices, scales_f16, table, y, row_begin, row_end); return true;
        case 3: apply_range<3>(shape, indices, scales_f16, table, y, row_begin, row_end); return true;
        case 4: apply_range<4>(shape, indices, scales_f16, table, y, row_begin, row_end); return true;
        default: apply_range<0>(shape, indices, scales_f16, table, y, row_begin, row_end); return true;
    }
}

// The int8 table (vq_lut.h, quantize_vq_table_int8): per block of
// vq_int8_block positions, max|T| (exact in any order), then
// q = clamp(round-to-nearest-even(T · (127 / max)), ±127) — cvtps_epi32
// rounds as lrint does in the default mode, and turns a NaN into INT_MIN as
// lrint does, so the clamp gives the reference's -127.
void quantize_table_int8(const VqTableShape& shape, const float* table, int8_t* q, float* block_scales) {
    const size_t positions = shape.positions, per_position = static_cast<size_t>(shape.stages) * shape.entries;
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    for (size_t b0 = 0; b0 < positions; b0 += vq_int8_block) {
        const size_t begin = b0 * per_position, end = std::min(positions, b0 + vq_int8_block) * per_position;
        __m256 max8 = _mm256_setzero_ps();
        size_t i = begin;
        // maxps returns its second operand when either is NaN: a NaN entry
        // is skipped, as std::max(max, NaN) skips it in the reference
        for (; i + 8 <= end; i += 8) max8 = _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(table + i), abs_mask), max8);
        alignas(32) float lanes[8];
        _mm256_store_ps(lanes, max8);
        float max_abs = 0;
        for (float lane : lanes) max_abs = std::max(max_abs, lane);
        for (; i < end; ++i) max_abs = std::max(max_abs, std::fabs(table[i]));
        const bool usable = max_abs > 0 && std::isfinite(max_abs);
        const float inv = usable ? 127.0f / max_abs : 0.0f;
        const __m256 inv8 = _mm256_set1_ps(inv);
        const __m256i lo = _mm256_set1_epi32(-127), hi = _mm256_set1_epi32(127);
        i = begin;
        for (; i + 8 <= end; i += 8) {
            __m256i v = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(table + i), inv8));
            v = _mm256_min_epi32(_mm256_max_epi32(v, lo), hi);
            const __m128i w16 = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
            _mm_storel_epi64(reinterpret_cast<__m128i*>(q + i), _mm_packs_epi16(w16, w16));
        }
        for (; i < end; ++i) q[i] = static_cast<int8_t>(std::clamp(std::lrint(table[i] * inv), -127l, 127l));
        block_scales[b0 / vq_int8_block] = usable ? max_abs / 127.0f : 0.0f;
    }
}

// The int8 mode's table in integers (vq_lut.h, build_vq_table_int8), 8
// entries (half of a 16-entry group) a vector. Without VNNI, the signed
// product trick: |xq| (unsigned) times cq with xq's sign applied (vpsignb),
// pairs summed in int16 by vpmaddubsw (≤ 2·127·127, no saturation: cq is
// never −128), then in int32 by vpmaddwd — the exact integer T.
inline __m256i int8_entries(const VqInt8Book& book, const __m256i* xs, const __m256i* xa, size_t group, size_t half,
                            size_t dwords) {
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i acc = _mm256_setzero_si256();
    const int8_t* c = book.values.data() + group * dwords * 64 + 32 * half;
    for (size_t d = 0; d < dwords; ++d) {
        const __m256i cd = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(c + 64 * d));
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(xa[d], _mm256_sign_epi8(cd, xs[d])), ones));
    }
    return acc;
}

inline int32_t reduce_max_epi32(__m256i v) {
    __m128i m = _mm_max_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    m = _mm_max_epi32(m, _mm_shuffle_epi32(m, 0x4E));
    m = _mm_max_epi32(m, _mm_shuffle_epi32(m, 0xB1));
    return _mm_cvtsi128_si32(m);
}

bool build_table_int8(const VqTableShape& shape, const VqInt8Book* books, const uint8_t* xu, const float* scales, int8_t* q,
                      float* block_scales) {
    if (static_cast<size_t>(shape.stages) > vq_int8_max_stages || shape.vec_dim <= 0 || shape.vec_dim > 64) return false;
    const size_t stages = shape.stages, entries = shape.entries;
    const size_t stride = vq_int8_input_stride(shape), dwords = stride / 4;
    const size_t halves = (entries + 7) / 8;
    __m256i xs[16], xa[16];
    const auto load_position = [&](size_t v) {
        for (size_t d = 0; d < dwords; ++d) {
            int32_t word;
            std::memcpy(&word, xu + v * stride + 4 * d, 4);
            xs[d] = _mm256_xor_si256(_mm256_set1_epi32(word), _mm256_set1_epi8(static_cast<char>(0x80)));  // xq
            xa[d] = _mm256_abs_epi8(xs[d]);
        }
    };
    build_int8_table_blocks(
        shape, books, scales, q, block_scales,
        [&](size_t v0, size_t v1, int32_t* amax) {
            for (size_t v = v0; v < v1; ++v) {
                load_position(v);
                for (size_t s = 0; s < stages; ++s) {
                    __m256i m = _mm256_setzero_si256();
                    for (size_t h = 0; h < halves; ++h)
                        m = _mm256_max_epi32(m, _mm256_abs_epi32(int8_entries(books[s], xs, xa, h / 2, h % 2, dwords)));
                    amax[(v - v0) * stages + s] = reduce_max_epi32(m);
                }
            }
        },
        [&](size_t v0, size_t v1, const float* factors) {
            const __m256i lo = _mm256_set1_epi32(-127), hi = _mm256_set1_epi32(127);
            for (size_t v = v0; v < v1; ++v) {
                load_position(v);
                for (size_t s = 0; s < stages; ++s) {
                    const __m256 f = _mm256_set1_ps(factors[(v - v0) * stages + s]);
                    int8_t* row = q + (v * stages + s) * entries;
                    for (size_t h = 0; h < halves; ++h) {
                        __m256 scaled = _mm256_mul_ps(_mm256_cvtepi32_ps(int8_entries(books[s], xs, xa, h / 2, h % 2, dwords)), f);
                        WASTE_KEEP(scaled);
                        const __m256i r = _mm256_min_epi32(_mm256_max_epi32(_mm256_cvtps_epi32(scaled), lo), hi);
                        const __m128i w16 = _mm_packs_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
                        const __m128i bytes = _mm_packs_epi16(w16, w16);
                        if (8 * h + 8 <= entries) {
                            _mm_storel_epi64(reinterpret_cast<__m128i*>(row + 8 * h), bytes);
                        } else {
                            alignas(16) int8_t tail[16];
                            _mm_store_si128(reinterpret_cast<__m128i*>(tail), bytes);
                            std::memcpy(row + 8 * h, tail, entries - 8 * h);
                        }
                    }
                }
            }
        });
    return true;
}

bool apply_table_int8(const VqTableShape& shape, bool packed6, const uint8_t* indices, const uint8_t* scales_f16,
                      const int8_t* q, const float* block_scales, float* y, size_t row_begin, size_t row_end) {
    if (row_begin >= row_end) return true;
    if (packed6) {
        if (shape.stages != 4) return false;
        apply_range_int8<6>(shape, indices, scales_f16, q, block_scales, y, row_begin, row_end);
        return true;
    }
    switch (shape.stages) {
        case 1: apply_range_int8<1>(shape, indices, scales_f16, q, block_scales, y, row_begin, row_end); return true;
        case 2: apply_range_int8<2>(shape, indices, scales_f16, q, block_scales, y, row_begin, row_end); return true;
        case 3: apply_range_int8<3>(shape, indices, scales_f16, q, block_scales, y, row_begin, row_end); return true;
        case 4: apply_range_int8<4>(shape, indices, scales_f16, q, block_scales, y, row_begin, row_end); return true;
        default: apply_range_int8<0>(shape, indices, scales_f16, q, block_scales, y, row_begin, row_end); return true;
    }
}

#undef WASTE_KEEP

}  // namespace avx2

WASTE_TARGET_END

WASTE_TARGET_BEGIN("avx512f,avx512bw,avx512vl,avx2,fma,f16c")

namespace avx512 {
#define WASTE_KEEP(v) __asm__("" : "+v"(v))
#include "kernels/isa_avx512.inc"
#undef WASTE_KEEP

// ---- prefill's matrix products (trunk_matmul.h, vq_matmul.h) on 16 lanes:
// the tiles are decoded by avx2's loops (avx2::matmul_rows and vq_matmul_rows
// given Tiles16, below), then dotted 16 columns a step with up to 6 tokens at once
// (4 rows × 6 tokens = 24 accumulators, 6 x vectors and a weight vector: 31
// of the 32 registers). Per (token, row): 16 lanes of fmas along the columns,
// then their sum — the same for every split of rows or tokens.
inline float* align_up_64(float* p) {
    return reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(p) + 63) & ~uintptr_t{63});
}

template <int R, int TB>
inline void tile_dot16(const float* tile, size_t ld_tile, size_t cols, const float* x, size_t ldx, float* y, size_t ldy,
                       size_t r0, size_t t0) {
    __m512 acc[R][TB];
    for (int k = 0; k < R; ++k)
        for (int j = 0; j < TB; ++j) acc[k][j] = _mm512_setzero_ps();
    size_t c = 0;
    for (; c + 16 <= cols; c += 16) {
        __m512 xv[TB];
        for (int j = 0; j < TB; ++j) xv[j] = _mm512_loadu_ps(x + (t0 + j) * ldx + c);
        for (int k = 0; k < R; ++k) {
            const __m512 w = _mm512_loadu_ps(tile + k * ld_tile + c);
            for (int j = 0; j < TB; ++j) acc[k][j] = _mm512_fmadd_ps(w, xv[j], acc[k][j]);
        }
    }
    if (c < cols) {
        // masked both: x stops at cols, the tile's tail lanes hold decoded padding
        const __mmask16 m = lanes_below(cols - c);
        __m512 xv[TB];
        for (int j = 0; j < TB; ++j) xv[j] = _mm512_maskz_loadu_ps(m, x + (t0 + j) * ldx + c);
        for (int k = 0; k < R; ++k) {
            const __m512 w = _mm512_maskz_loadu_ps(m, tile + k * ld_tile + c);
            for (int j = 0; j < TB; ++j) acc[k][j] = _mm512_fmadd_ps(w, xv[j], acc[k][j]);
        }
    }
    for (int k = 0; k < R; ++k)
        for (int j = 0; j < TB; ++j) y[(t0 + j) * ldy + r0 + k] = _mm512_reduce_add_ps(acc[k][j]);
}

template <int R>
inline void tile_tokens16(const float* tile, size_t ld_tile, size_t cols, const float* x, size_t ldx, size_t tokens, float* y,
                          size_t ldy, size_t r0) {
    // passes of at most 6 tokens, as even as they divide (8 = 4 + 4, not
    // 6 + 2: a 2-token pass loads 3 values per 4 multiply-adds)
    size_t t = 0;
    while (tokens - t > 6) {
        const size_t passes = (tokens - t + 5) / 6, take = (tokens - t + passes - 1) / passes;
        switch (take) {
            case 6: tile_dot16<R, 6>(tile, ld_tile, cols, x, ldx, y, ldy, r0, t); break;
            case 5: tile_dot16<R, 5>(tile, ld_tile, cols, x, ldx, y, ldy, r0, t); break;
            default: tile_dot16<R, 4>(tile, ld_tile, cols, x, ldx, y, ldy, r0, t); break;
        }
        t += take;
    }
    switch (tokens - t) {
        case 6: tile_dot16<R, 6>(tile, ld_tile, cols, x, ldx, y, ldy, r0, t); break;
        case 5: tile_dot16<R, 5>(tile, ld_tile, cols, x, ldx, y, ldy, r0, t); break;
        case 4: tile_dot16<R, 4>(tile, ld_tile, cols, x, ldx, y, ldy, r0, t); break;
        case 3: tile_dot16<R, 3>(tile, ld_tile, cols, x, ldx, y, ldy, r0, t); break;
        case 2: tile_dot16<R, 2>(tile, ld_tile, cols, x, ldx, y, ldy, r0, t); break;
        case 1: tile_dot16<R, 1>(tile, ld_tile, cols, x, ldx, y, ldy, r0, t); break;
        default: break;
    }
}

// The 16-lane tile kernels for avx2's decoding loops (avx2::Tiles8's
// counterpart): rows of whole 64-byte lines from a 64-byte boundary, so a
// 16-lane load never straddles two lines.
struct Tiles16 {
    static size_t ld(size_t cols) { return (cols + 15) / 16 * 16; }
    static constexpr size_t slack = 16;  // room to move the start to a line
    static float* start(float* scratch) { return align_up_64(scratch); }
    static void dot(size_t n, const float* tile, size_t ld_tile, size_t cols, const float* x, size_t ldx, size_t tokens,
                    float* y, size_t ldy, size_t r) {
        switch (n) {
            case 4: tile_tokens16<4>(tile, ld_tile, cols, x, ldx, tokens, y, ldy, r); break;
            case 3: tile_tokens16<3>(tile, ld_tile, cols, x, ldx, tokens, y, ldy, r); break;
            case 2: tile_tokens16<2>(tile, ld_tile, cols, x, ldx, tokens, y, ldy, r); break;
            default: tile_tokens16<1>(tile, ld_tile, cols, x, ldx, tokens, y, ldy, r); break;
        }
    }
};
}  // namespace avx512

WASTE_TARGET_END

// The approximate int8 mode's byte permutes need VBMI on top (Ice Lake, Zen 4
// and later); called only when the CPU reports it.
WASTE_TARGET_BEGIN("avx512f,avx512bw,avx512vl,avx512vbmi,avx2,fma,f16c")

namespace avx512::vbmi {
#define WASTE_KEEP(v) __asm__("" : "+v"(v))
#include "kernels/isa_avx512_vbmi.inc"
#undef WASTE_KEEP
}  // namespace avx512::vbmi

WASTE_TARGET_END

// The int8 mode's integer table build needs VNNI (Cascade Lake, Ice Lake,
// Zen 4 and later); called only when the CPU reports it.
WASTE_TARGET_BEGIN("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")

namespace avx512::vnni {
#define WASTE_KEEP(v) __asm__("" : "+v"(v))
#include "kernels/isa_avx512_vnni.inc"
#undef WASTE_KEEP
}  // namespace avx512::vnni

WASTE_TARGET_END

}  // namespace

bool matvec_rows_x86(Isa isa, const format::LoadedTensor& w, const float* x, float* y, size_t row_begin,
                     size_t row_end) {
    const TrunkView t = trunk_view(w);
    switch (isa) {
        case Isa::avx512: return avx512::matvec_rows(t, x, y, row_begin, row_end);
        case Isa::avx2: return avx2::matvec_rows(t, x, y, row_begin, row_end);
        case Isa::scalar:
        case Isa::neon: return false;
    }
    return false;
}

bool vq_matmul_rows_x86(Isa isa, const VqTableShape& shape, bool packed6, const uint8_t* indices, const uint8_t* scales_f16,
                        const float* books, const float* x, size_t ldx, size_t tokens, float* y, size_t ldy, size_t row_begin,
                        size_t row_end) {
    if (isa == Isa::scalar) return false;
    if (isa == Isa::avx512)
        return avx2::vq_matmul_rows<avx512::Tiles16>(shape, packed6, indices, scales_f16, books, x, ldx, tokens, y, ldy,
                                                     row_begin, row_end);
    return avx2::vq_matmul_rows<avx2::Tiles8>(shape, packed6, indices, scales_f16, books, x, ldx, tokens, y, ldy, row_begin,
                                              row_end);
}

bool vq_dequantize_rows_x86(Isa isa, const VqTableShape& shape, bool packed6, const uint8_t* indices, const float* books,
                            size_t row_begin, size_t n, float* out, size_t ld) {
    if (isa == Isa::scalar || shape.vec_dim != 8 || (packed6 && shape.stages != 4)) return false;
    for (size_t done = 0; done < n; done += avx2::tile_rows) {
        const size_t part = std::min(avx2::tile_rows, n - done);
        float* rows = out + done * ld;
        if (packed6) avx2::dequantise_vq_rows<true, 4>(shape, indices, books, row_begin + done, part, rows, ld);
        else if (shape.stages == 3) avx2::dequantise_vq_rows<false, 3>(shape, indices, books, row_begin + done, part, rows, ld);
        else if (shape.stages == 2) avx2::dequantise_vq_rows<false, 2>(shape, indices, books, row_begin + done, part, rows, ld);
        else avx2::dequantise_vq_rows<false, 0>(shape, indices, books, row_begin + done, part, rows, ld);
    }
    return true;
}

size_t matmul_tile_floats_x86(const format::LoadedTensor& w) {
    // the AVX-512 body's layout (rows of whole lines, from a 64-byte boundary) fits too
    return std::max(avx2::matmul_tile_floats<avx2::Tiles8>(trunk_view(w)),
                    avx2::matmul_tile_floats<avx512::Tiles16>(trunk_view(w)));
}

bool matmul_rows_x86(Isa isa, const format::LoadedTensor& w, const float* x, size_t ldx, size_t tokens, float* y, size_t ldy,
                     size_t row_begin, size_t row_end, float* tile) {
    if (isa == Isa::scalar) return false;
    if (isa == Isa::avx512)
        return avx2::matmul_rows<avx512::Tiles16>(trunk_view(w), x, ldx, tokens, y, ldy, row_begin, row_end, tile);
    return avx2::matmul_rows<avx2::Tiles8>(trunk_view(w), x, ldx, tokens, y, ldy, row_begin, row_end, tile);
}

bool dequantize_rows_x86(Isa isa, const format::LoadedTensor& w, size_t row_begin, size_t n, float* out, size_t ld) {
    if (isa == Isa::scalar || isa == Isa::neon) return false;
    return avx2::dequantize_rows(trunk_view(w), row_begin, n, out, ld);  // the AVX2 body also serves AVX-512 CPUs
}

bool build_vq_table_x86(Isa isa, const VqTableShape& shape, const float* books, const float* x, float* table) {
    switch (isa) {
        case Isa::avx512: return avx512::build_table(shape, books, x, table);
        case Isa::avx2: return avx2::build_table(shape, books, x, table);
        case Isa::scalar:
        case Isa::neon: return false;
    }
    return false;
}

bool apply_vq_table_x86(Isa isa, const VqTableShape& shape, bool packed6, const uint8_t* indices,
                        const uint8_t* scales_f16, const float* table, float* y, size_t row_begin, size_t row_end) {
    switch (isa) {
        case Isa::avx512:
            if (avx512::apply_table(shape, packed6, indices, scales_f16, table, y, row_begin, row_end)) return true;
            return avx2::apply_table(shape, packed6, indices, scales_f16, table, y, row_begin, row_end);
        case Isa::avx2: return avx2::apply_table(shape, packed6, indices, scales_f16, table, y, row_begin, row_end);
        case Isa::scalar:
        case Isa::neon: return false;
    }
    return false;
}

bool quantize_vq_table_int8_x86(Isa isa, const VqTableShape& shape, const float* table, int8_t* q, float* block_scales) {
    if (isa == Isa::scalar) return false;
    if (isa == Isa::avx512) avx512::quantize_int8(shape, table, q, block_scales);
    else avx2::quantize_table_int8(shape, table, q, block_scales);
    return true;
}

bool build_vq_table_int8_x86(Isa isa, const VqTableShape& shape, const VqInt8Book* books, const uint8_t* xu,
                             const float* scales, int8_t* q, float* block_scales) {
    if (isa == Isa::avx512 && int8_vnni_path() && avx512::vnni::build_int8(shape, books, xu, scales, q, block_scales)) return true;
    if (isa == Isa::scalar || isa == Isa::neon) return false;
    return avx2::build_table_int8(shape, books, xu, scales, q, block_scales);
}

bool apply_vq_table_int8_x86(Isa isa, const VqTableShape& shape, bool packed6, const uint8_t* indices,
                             const uint8_t* scales_f16, const int8_t* q, const float* block_scales, float* y, size_t row_begin,
                             size_t row_end) {
    if (isa == Isa::avx512 && vq_int8_fast_path() &&
        avx512::vbmi::apply_int8(shape, packed6, indices, scales_f16, q, block_scales, y, row_begin, row_end))
        return true;
    // the AVX2 body also serves AVX-512 CPUs without VBMI
    if (isa == Isa::scalar) return false;
    return avx2::apply_table_int8(shape, packed6, indices, scales_f16, q, block_scales, y, row_begin, row_end);
}

}  // namespace waste::kernels

#endif  // WASTE_X86_SIMD
