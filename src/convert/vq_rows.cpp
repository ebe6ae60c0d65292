#include "convert/vq_rows.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/isa.h"

#if WASTE_X86_SIMD
#include <immintrin.h>

#include "platform/target_region.h"
#endif

namespace waste::convert::row_passes {
namespace {

// The bodies, inlined into a baseline and an AVX-512 copy each. None has a
// multiply followed by an add (GCC would contract that into an FMA in the
// AVX-512 copy only), so both copies compute the same values.

__attribute__((always_inline)) inline uint32_t first_non_finite_body(const float* row, uint32_t cols) {
    uint32_t any = 0;  // branch-free, so the compiler vectorises it; the scan below only runs on bad input
    for (uint32_t i = 0; i < cols; ++i) {
        uint32_t bits;
        std::memcpy(&bits, row + i, sizeof bits);
        any |= static_cast<uint32_t>((bits & 0x7F800000u) == 0x7F800000u);
    }
    if (any == 0) return cols;
    for (uint32_t i = 0; i < cols; ++i)
        if (!std::isfinite(row[i])) return i;
    return cols;
}

// The largest magnitude as the largest bit pattern (the same order for
// non-negative floats; NaN patterns, above +inf's, dropped): an integer max
// the compiler vectorises, where a float max reduction stays scalar.
__attribute__((always_inline)) inline float absmax_body(const float* row, uint32_t cols) {
    uint32_t top = 0;
    for (uint32_t i = 0; i < cols; ++i) {
        uint32_t bits;
        std::memcpy(&bits, row + i, sizeof bits);
        bits &= 0x7FFFFFFFu;
        top = std::max(top, bits > 0x7F800000u ? 0u : bits);
    }
    float result;
    std::memcpy(&result, &top, sizeof result);
    return result;
}

__attribute__((always_inline)) inline void divide_body(const float* row, uint32_t cols, float scale, float* out) {
    for (uint32_t i = 0; i < cols; ++i) out[i] = row[i] / scale;
}

__attribute__((always_inline)) inline void subtract_body(const SearchBook& book, const uint8_t* labels,
                                                         uint32_t positions, float* __restrict residual) {
    for (uint32_t v = 0; v < positions; ++v) {
        const float* __restrict c = book.centroid(labels[v]);
        float* __restrict r = residual + static_cast<size_t>(v) * vq_dim;
        for (int j = 0; j < vq_dim; ++j) r[j] -= c[j];
    }
}

RowError combine(const double* e, const double* w) {
    return {((e[0] + e[1]) + (e[2] + e[3])) + ((e[4] + e[5]) + (e[6] + e[7])),
            ((w[0] + w[1]) + (w[2] + w[3])) + ((w[4] + w[5]) + (w[6] + w[7]))};
}

// The generic copy: x86-64's baseline has no FMA to contract into; AArch64
// has, so there the products are pinned (the asm) before they are added.
RowError row_error_any(const float* w, const float* normalised, const float* residual, uint32_t cols, double scale) {
    double e[8] = {}, s[8] = {};
    for (uint32_t i = 0; i < cols; i += 8)
        for (uint32_t k = 0; k < 8; ++k) {
            const double original = w[i + k];
            double decoded = scale * (static_cast<double>(normalised[i + k]) - residual[i + k]);
            double diff = original - decoded;
            double d2 = diff * diff, o2 = original * original;
#if defined(__GNUC__) && defined(__aarch64__)
            __asm__("" : "+w"(decoded), "+w"(d2), "+w"(o2));
#endif
            e[k] += d2;
            s[k] += o2;
        }
    return combine(e, s);
}

#if WASTE_X86_SIMD
WASTE_TARGET_BEGIN("avx512f")  // AVX-512F only: what the dispatch checks

// (GCC 12 leaves the bodies' loops scalar at this target; hence intrinsics.)
__attribute__((noinline)) uint32_t first_non_finite_avx512(const float* row, uint32_t cols) {
    const __m512i exponent = _mm512_set1_epi32(0x7F800000);
    __mmask16 any = 0;
    for (uint32_t i = 0; i < cols; i += 16) {
        const __mmask16 in = cols - i >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << (cols - i)) - 1);
        const __m512i bits = _mm512_maskz_loadu_epi32(in, row + i);
        any |= _mm512_mask_cmpeq_epi32_mask(in, _mm512_and_si512(bits, exponent), exponent);
    }
    return any == 0 ? cols : first_non_finite_body(row, cols);
}

__attribute__((noinline)) float absmax_avx512(const float* row, uint32_t cols) {
    const __m512i magnitude = _mm512_set1_epi32(0x7FFFFFFF), infinity = _mm512_set1_epi32(0x7F800000);
    __m512i top = _mm512_setzero_si512();
    for (uint32_t i = 0; i < cols; i += 16) {
        const __mmask16 in = cols - i >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << (cols - i)) - 1);
        const __m512i bits = _mm512_and_si512(_mm512_maskz_loadu_epi32(in, row + i), magnitude);
        top = _mm512_mask_max_epu32(top, _mm512_cmple_epu32_mask(bits, infinity), top, bits);  // NaNs skipped
    }
    alignas(64) uint32_t lanes[16];
    _mm512_store_si512(lanes, top);
    uint32_t m = 0;
    for (uint32_t l : lanes) m = std::max(m, l);
    float result;
    std::memcpy(&result, &m, sizeof result);
    return result;
}

__attribute__((noinline)) void divide_avx512(const float* row, uint32_t cols, float scale, float* out) {
    const __m512 s = _mm512_set1_ps(scale);
    for (uint32_t i = 0; i < cols; i += 16) {
        const __mmask16 in = cols - i >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << (cols - i)) - 1);
        _mm512_mask_storeu_ps(out + i, in, _mm512_div_ps(_mm512_maskz_loadu_ps(in, row + i), s));
    }
}

__attribute__((noinline)) void subtract_avx512(const SearchBook& book, const uint8_t* labels, uint32_t positions,
                                               float* residual) {
    for (uint32_t v = 0; v < positions; ++v) {
        float* r = residual + static_cast<size_t>(v) * vq_dim;
        _mm256_storeu_ps(r, _mm256_sub_ps(_mm256_loadu_ps(r), _mm256_loadu_ps(book.centroid(labels[v]))));
    }
}

// Lane k of the accumulators is partial sum k; every product is kept apart
// from its add (the asm) so that none becomes an FMA: row_error_any's values.
__attribute__((noinline)) RowError row_error_avx512(const float* w, const float* normalised, const float* residual,
                                                    uint32_t cols, double scale) {
    __m512d e = _mm512_setzero_pd(), s = _mm512_setzero_pd();
    const __m512d sc = _mm512_set1_pd(scale);
    for (uint32_t i = 0; i < cols; i += 8) {
        const __m512d original = _mm512_cvtps_pd(_mm256_loadu_ps(w + i));
        const __m512d n = _mm512_cvtps_pd(_mm256_loadu_ps(normalised + i));
        const __m512d r = _mm512_cvtps_pd(_mm256_loadu_ps(residual + i));
        __m512d decoded = _mm512_mul_pd(sc, _mm512_sub_pd(n, r));
        __asm__("" : "+v"(decoded));
        const __m512d diff = _mm512_sub_pd(original, decoded);
        __m512d d2 = _mm512_mul_pd(diff, diff), o2 = _mm512_mul_pd(original, original);
        __asm__("" : "+v"(d2), "+v"(o2));
        e = _mm512_add_pd(e, d2);
        s = _mm512_add_pd(s, o2);
    }
    alignas(64) double es[8], ss[8];
    _mm512_store_pd(es, e);
    _mm512_store_pd(ss, s);
    return combine(es, ss);
}

WASTE_TARGET_END
#endif

[[maybe_unused]] bool use_avx512(RowPath path) {
#if WASTE_X86_SIMD
    return path == RowPath::best && avx512_search_available();
#else
    (void)path;
    return false;
#endif
}

}  // namespace

uint32_t first_non_finite(const float* row, uint32_t cols, [[maybe_unused]] RowPath path) {
#if WASTE_X86_SIMD
    if (use_avx512(path)) return first_non_finite_avx512(row, cols);
#endif
    return first_non_finite_body(row, cols);
}

float absmax(const float* row, uint32_t cols, [[maybe_unused]] RowPath path) {
#if WASTE_X86_SIMD
    if (use_avx512(path)) return absmax_avx512(row, cols);
#endif
    return absmax_body(row, cols);
}

void divide(const float* row, uint32_t cols, float scale, float* out, [[maybe_unused]] RowPath path) {
#if WASTE_X86_SIMD
    if (use_avx512(path)) return divide_avx512(row, cols, scale, out);
#endif
    divide_body(row, cols, scale, out);
}

void subtract_centroids(const SearchBook& book, const uint8_t* labels, uint32_t positions, float* residual,
                        [[maybe_unused]] RowPath path) {
#if WASTE_X86_SIMD
    if (use_avx512(path)) return subtract_avx512(book, labels, positions, residual);
#endif
    subtract_body(book, labels, positions, residual);
}

RowError row_error(const float* w, const float* normalised, const float* residual, uint32_t cols, double scale,
                   [[maybe_unused]] RowPath path) {
#if WASTE_X86_SIMD
    if (use_avx512(path)) return row_error_avx512(w, normalised, residual, cols, scale);
#endif
    return row_error_any(w, normalised, residual, cols, scale);
}

}  // namespace waste::convert::row_passes
