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
//   operations per entry / per row, only side by side in vector lanes).
#include "kernels/isa_kernels.h"

#if WASTE_X86_SIMD

#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "format/f16.h"

// GCC 12 warns inside its own AVX-512 headers (_mm512_undefined_* used as
// the pass-through of unmasked intrinsics): a known false positive.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace waste::kernels {

namespace {

using format::TrunkFormat;

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

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
// 6-bit indices in 3 bytes); 0 = any other stage count (slow index path).
// row_words: 8 consecutive rows of one (block, position); lane r holds the
// row's index bytes (≤ 4) as one little-endian word.
template <int K>
inline __m256i row_words(const uint8_t* p) {
    if constexpr (K == 1) {
        return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
    } else if constexpr (K == 2) {
        return _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    } else if constexpr (K == 4) {
        return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    } else {
        // 24 bytes: rows 0-3 from bytes 0..11, rows 4-7 from bytes 12..23
        // (read as bytes 8..23, so nothing past the 8 rows is touched)
        const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
        const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 8));
        const __m128i a = _mm_shuffle_epi8(lo, _mm_setr_epi8(0, 1, 2, -1, 3, 4, 5, -1, 6, 7, 8, -1, 9, 10, 11, -1));
        const __m128i b = _mm_shuffle_epi8(hi, _mm_setr_epi8(4, 5, 6, -1, 7, 8, 9, -1, 10, 11, 12, -1, 13, 14, 15, -1));
        return _mm256_set_m128i(b, a);
    }
}

template <int K, int s>
inline __m256i stage_index(__m256i words) {
    if constexpr (K == 6) {
        if constexpr (s == 3) return _mm256_srli_epi32(words, 18);
        else return _mm256_and_si256(_mm256_srli_epi32(words, 6 * s), _mm256_set1_epi32(63));
    } else {
        if constexpr (s == K - 1) return _mm256_srli_epi32(words, 8 * s);
        else return _mm256_and_si256(_mm256_srli_epi32(words, 8 * s), _mm256_set1_epi32(255));
    }
}

template <int K, int S, int s>
inline void gather_stages(__m256 (&acc)[8], const __m256i (&words)[8], const __m256 (&m)[8], const float* t,
                          size_t entries) {
    if constexpr (s < S) {
        for (int g = 0; g < 8; ++g)
            acc[g] = _mm256_add_ps(
                acc[g], _mm256_mask_i32gather_ps(_mm256_setzero_ps(), t + s * entries, stage_index<K, s>(words[g]), m[g], 4));
        gather_stages<K, S, s + 1>(acc, words, m, t, entries);
    }
}

// y[r] = scale[r] · acc (one rounding, as in the scalar reference).
inline void store_rows(const uint8_t* scales_f16, float* y, size_t r0, size_t lo, size_t hi, __m256 acc) {
    if (lo == 0 && hi == 8) {
        const __m256 scale = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(scales_f16 + 2 * r0)));
        _mm256_storeu_ps(y + r0, _mm256_mul_ps(scale, acc));
        return;
    }
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, acc);
    for (size_t l = lo; l < hi; ++l) {
        uint16_t bits;
        std::memcpy(&bits, scales_f16 + 2 * (r0 + l), 2);
        y[r0 + l] = format::f16_to_f32(bits) * lanes[l];
    }
}

// The table is walked in chunks of positions small enough to stay in L1
// (gate/up tables of a large expert are megabytes); each chunk runs over
// every 64-row block of the range: 8 vectors of 8 rows, each lane adding its
// row's lookups in the reference order (position, then stage). Between chunks
// a row's partial sum waits in y (stored and reloaded exactly).
inline size_t chunk_positions(size_t per_position_floats) {
    return std::max<size_t>(1, 6144 / std::max<size_t>(1, per_position_floats));
}

template <int K>
void apply_range(const VqTableShape& shape, const uint8_t* indices, const uint8_t* scales_f16, const float* table,
                 float* y, size_t row_begin, size_t row_end) {
    constexpr int S = K == 6 ? 4 : K;
    const size_t positions = shape.positions, entries = shape.entries, stages = shape.stages;
    const size_t bytes = K == 6 ? 3 : K == 0 ? stages : K;  // per (row, position)
    const size_t per_position = stages * entries;          // table floats
    const size_t chunk = chunk_positions(per_position);
    for (size_t v0 = 0; v0 < positions || v0 == 0; v0 += chunk) {
        const size_t v1 = std::min(positions, v0 + chunk);
        for (size_t block = row_begin / 64; block * 64 < row_end; ++block) {
            const size_t base = block * 64;
            __m256 m[8];
            __m256 acc[8];
            size_t lo[8], hi[8];
            for (int g = 0; g < 8; ++g) {
                const size_t first = base + 8 * g;
                lo[g] = std::clamp(row_begin, first, first + 8) - first;
                hi[g] = std::clamp(row_end, first, first + 8) - first;
                const __m256i mask = _mm256_andnot_si256(lanes_below(lo[g]), lanes_below(hi[g]));
                m[g] = _mm256_castsi256_ps(mask);
                acc[g] = v0 == 0 ? _mm256_setzero_ps() : _mm256_maskload_ps(y + first, mask);
            }
            const uint8_t* block_idx = indices + block * positions * 64 * bytes;
            for (size_t v = v0; v < v1; ++v) {
                const uint8_t* p = block_idx + v * 64 * bytes;
                const float* t = table + v * per_position;
                if constexpr (K != 0) {
                    __m256i words[8];
                    for (int g = 0; g < 8; ++g) words[g] = row_words<K>(p + g * 8 * bytes);
                    gather_stages<K, S, 0>(acc, words, m, t, entries);
                } else {
                    for (size_t s = 0; s < stages; ++s) {
                        for (int g = 0; g < 8; ++g) {
                            alignas(32) int32_t lane_idx[8];
                            for (int l = 0; l < 8; ++l) lane_idx[l] = p[(g * 8 + l) * bytes + s];
                            const __m256i idx = _mm256_load_si256(reinterpret_cast<const __m256i*>(lane_idx));
                            acc[g] = _mm256_add_ps(acc[g],
                                                   _mm256_mask_i32gather_ps(_mm256_setzero_ps(), t + s * entries, idx, m[g], 4));
                        }
                    }
                }
            }
            for (int g = 0; g < 8; ++g) {
                if (lo[g] >= hi[g]) continue;
                if (v1 == positions) store_rows(scales_f16, y, base + 8 * g, lo[g], hi[g], acc[g]);
                else _mm256_maskstore_ps(y + base + 8 * g, _mm256_castps_si256(m[g]), acc[g]);
            }
        }
        if (v1 == positions) break;
    }
}

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

#undef WASTE_KEEP

}  // namespace avx2

#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")

namespace avx512 {
#define WASTE_KEEP(v) __asm__("" : "+v"(v))
#include "kernels/isa_avx512.inc"
#undef WASTE_KEEP
}  // namespace avx512

#pragma GCC pop_options

// The approximate int8 mode's byte permutes need VBMI on top (Ice Lake, Zen 4
// and later); called only when the CPU reports it.
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512vbmi,avx2,fma,f16c")

namespace avx512::vbmi {
#define WASTE_KEEP(v) __asm__("" : "+v"(v))
#include "kernels/isa_avx512_vbmi.inc"
#undef WASTE_KEEP
}  // namespace avx512::vbmi

#pragma GCC pop_options

}  // namespace

bool matvec_rows_x86(Isa isa, const format::LoadedTensor& w, const float* x, float* y, size_t row_begin,
                     size_t row_end) {
    const TrunkView t = trunk_view(w);
    switch (isa) {
        case Isa::avx512: return avx512::matvec_rows(t, x, y, row_begin, row_end);
        case Isa::avx2: return avx2::matvec_rows(t, x, y, row_begin, row_end);
        case Isa::scalar: return false;
    }
    return false;
}

bool build_vq_table_x86(Isa isa, const VqTableShape& shape, const float* books, const float* x, float* table) {
    switch (isa) {
        case Isa::avx512: return avx512::build_table(shape, books, x, table);
        case Isa::avx2: return avx2::build_table(shape, books, x, table);
        case Isa::scalar: return false;
    }
    return false;
}

bool apply_vq_table_x86(Isa isa, const VqTableShape& shape, bool packed6, const uint8_t* indices,
                        const uint8_t* scales_f16, const float* table, float* y, size_t row_begin, size_t row_end) {
    switch (isa) {
        case Isa::avx512: return avx512::apply_table(shape, packed6, indices, scales_f16, table, y, row_begin, row_end);
        case Isa::avx2: return avx2::apply_table(shape, packed6, indices, scales_f16, table, y, row_begin, row_end);
        case Isa::scalar: return false;
    }
    return false;
}

bool apply_vq_table_int8_x86(const VqTableShape& shape, bool packed6, const uint8_t* indices, const uint8_t* scales_f16,
                             const int8_t* q, const float* block_scales, float* y, size_t row_begin, size_t row_end) {
    return avx512::vbmi::apply_int8(shape, packed6, indices, scales_f16, q, block_scales, y, row_begin, row_end);
}

}  // namespace waste::kernels

#endif  // WASTE_X86_SIMD
