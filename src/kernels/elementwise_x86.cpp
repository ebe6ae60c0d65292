// elementwise_x86.cpp — the AVX2 and AVX-512 variants of elementwise.h: the
// bodies are elementwise_simd.inc, included once per `#pragma GCC target`
// region over that region's vector type. Precision: elementwise.h.
#include "kernels/elementwise.h"

#if WASTE_X86_SIMD

#include <immintrin.h>

#include "platform/target_region.h"

#include <cmath>
#include <cstdint>

#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)  // a GCC-only warning
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace waste::kernels {

namespace {

WASTE_TARGET_BEGIN("avx2,fma")

namespace avx2 {

struct V {
    using T = __m256;
    static constexpr size_t W = 8;
    static __m256i mask(size_t left) {
        return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(left < W ? left : W)),
                                  _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    }
    static T load(const float* p, size_t left) { return left >= W ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, mask(left)); }
    static void store(float* p, size_t left, T v) {
        if (left >= W) _mm256_storeu_ps(p, v);
        else _mm256_maskstore_ps(p, mask(left), v);
    }
    static T set1(float v) { return _mm256_set1_ps(v); }
    static T add(T a, T b) { return _mm256_add_ps(a, b); }
    static T sub(T a, T b) { return _mm256_sub_ps(a, b); }
    static T mul(T a, T b) { return _mm256_mul_ps(a, b); }
    static T div(T a, T b) { return _mm256_div_ps(a, b); }
    static T fma(T a, T b, T c) { return _mm256_fmadd_ps(a, b, c); }
    // min/max return their second operand when either is NaN: x there keeps NaN
    static T min_c(float c, T x) { return _mm256_min_ps(_mm256_set1_ps(c), x); }
    static T max_c(float c, T x) { return _mm256_max_ps(_mm256_set1_ps(c), x); }
    static T round(T x) { return _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
    static T pow2_minus1(T n) {
        return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(126)), 23));
    }
    static T abs(T x) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x); }
    static T copysign(T mag, T sign) {
        const T bit = _mm256_set1_ps(-0.0f);
        return _mm256_or_ps(_mm256_andnot_ps(bit, mag), _mm256_and_ps(bit, sign));
    }
    static double sum_squares(const float* x, size_t n) {
        __m256d acc0 = _mm256_setzero_pd(), acc1 = _mm256_setzero_pd();
        for (size_t i = 0; i < n; i += W) {
            const T v = load(x + i, n - i);  // lanes past n are 0 and add nothing
            const __m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(v)), hi = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
            acc0 = _mm256_fmadd_pd(lo, lo, acc0);  // x² is exact in f64: the same as a multiply and an add
            acc1 = _mm256_fmadd_pd(hi, hi, acc1);
        }
        const __m256d s = _mm256_add_pd(acc0, acc1);
        const __m128d h = _mm_add_pd(_mm256_castpd256_pd128(s), _mm256_extractf128_pd(s, 1));
        return _mm_cvtsd_f64(_mm_add_sd(h, _mm_unpackhi_pd(h, h)));
    }
};

#include "kernels/elementwise_simd.inc"

}  // namespace avx2

WASTE_TARGET_END

WASTE_TARGET_BEGIN("avx512f")

namespace avx512 {

struct V {
    using T = __m512;
    static constexpr size_t W = 16;
    static __mmask16 mask(size_t left) { return left >= W ? 0xFFFF : static_cast<__mmask16>((1u << left) - 1); }
    static T load(const float* p, size_t left) { return _mm512_maskz_loadu_ps(mask(left), p); }
    static void store(float* p, size_t left, T v) { _mm512_mask_storeu_ps(p, mask(left), v); }
    static T set1(float v) { return _mm512_set1_ps(v); }
    static T add(T a, T b) { return _mm512_add_ps(a, b); }
    static T sub(T a, T b) { return _mm512_sub_ps(a, b); }
    static T mul(T a, T b) { return _mm512_mul_ps(a, b); }
    static T div(T a, T b) { return _mm512_div_ps(a, b); }
    static T fma(T a, T b, T c) { return _mm512_fmadd_ps(a, b, c); }
    static T min_c(float c, T x) { return _mm512_min_ps(_mm512_set1_ps(c), x); }
    static T max_c(float c, T x) { return _mm512_max_ps(_mm512_set1_ps(c), x); }
    static T round(T x) { return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
    static T pow2_minus1(T n) {
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(126)), 23));
    }
    static T abs(T x) { return _mm512_castsi512_ps(_mm512_andnot_si512(_mm512_set1_epi32(INT32_MIN), _mm512_castps_si512(x))); }
    static T copysign(T mag, T sign) {
        const __m512i bit = _mm512_set1_epi32(INT32_MIN);
        return _mm512_castsi512_ps(_mm512_or_si512(_mm512_andnot_si512(bit, _mm512_castps_si512(mag)),
                                                   _mm512_and_si512(bit, _mm512_castps_si512(sign))));
    }
    static double sum_squares(const float* x, size_t n) {
        __m512d acc0 = _mm512_setzero_pd(), acc1 = _mm512_setzero_pd();
        for (size_t i = 0; i < n; i += W) {
            const T v = load(x + i, n - i);  // lanes past n are 0 and add nothing
            const __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
            const __m512d hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
            acc0 = _mm512_fmadd_pd(lo, lo, acc0);  // x² is exact in f64: the same as a multiply and an add
            acc1 = _mm512_fmadd_pd(hi, hi, acc1);
        }
        return _mm512_reduce_add_pd(_mm512_add_pd(acc0, acc1));
    }
    // out[r] = 0 + v[r]₀ + v[r]₁ + … + v[r]₁₅, added in that order, for the
    // 16 rows at once: v transposed (columns c = lane c of every row), then
    // the columns added in order — each row's adds are sum_lanes's.
    static void sum_lanes_transposed(const T* v, float* out) {
        T u[16];
        for (size_t a = 0; a < 16; a += 4) {
            // rows a..a+3: within each 128-bit lane L, u[a + j] holds their element 4L + j
            const T t0 = _mm512_unpacklo_ps(v[a], v[a + 1]), t1 = _mm512_unpackhi_ps(v[a], v[a + 1]);
            const T t2 = _mm512_unpacklo_ps(v[a + 2], v[a + 3]), t3 = _mm512_unpackhi_ps(v[a + 2], v[a + 3]);
            u[a] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t0), _mm512_castps_pd(t2)));
            u[a + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t0), _mm512_castps_pd(t2)));
            u[a + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t1), _mm512_castps_pd(t3)));
            u[a + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t1), _mm512_castps_pd(t3)));
        }
        T column[16];
        for (size_t j = 0; j < 4; ++j) {
            // 128-bit lanes L of rows 0..3 | 4..7 | 8..11 | 12..15 gathered: column 4L + j
            const T x01 = _mm512_shuffle_f32x4(u[j], u[4 + j], 0x44), y01 = _mm512_shuffle_f32x4(u[j], u[4 + j], 0xEE);
            const T x23 = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], 0x44), y23 = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], 0xEE);
            column[j] = _mm512_shuffle_f32x4(x01, x23, 0x88);
            column[4 + j] = _mm512_shuffle_f32x4(x01, x23, 0xDD);
            column[8 + j] = _mm512_shuffle_f32x4(y01, y23, 0x88);
            column[12 + j] = _mm512_shuffle_f32x4(y01, y23, 0xDD);
        }
        T sum = _mm512_setzero_ps();
        for (size_t c = 0; c < 16; ++c) sum = _mm512_add_ps(sum, column[c]);
        _mm512_storeu_ps(out, sum);
    }
};

#include "kernels/elementwise_simd.inc"

}  // namespace avx512

WASTE_TARGET_END

}  // namespace

bool rmsnorm_x86(Isa isa, const float* x, const float* w, float eps, size_t n, float* out) {
    if (isa == Isa::avx512) avx512::rmsnorm_simd(x, w, eps, n, out);
    else if (isa == Isa::avx2) avx2::rmsnorm_simd(x, w, eps, n, out);
    else return false;
    return true;
}

bool glu_x86(Isa isa, const GluActivation& act, float* g, const float* u, size_t n) {
    if (isa == Isa::avx512) avx512::glu_simd(act, g, u, n);
    else if (isa == Isa::avx2) avx2::glu_simd(act, g, u, n);
    else return false;
    return true;
}

bool mul_sigmoid_x86(Isa isa, float* x, const float* gate, size_t n) {
    if (isa == Isa::avx512) avx512::mul_sigmoid_simd(x, gate, n);
    else if (isa == Isa::avx2) avx2::mul_sigmoid_simd(x, gate, n);
    else return false;
    return true;
}

bool dot_x86(Isa isa, const float* a, const float* b, size_t n, float* out) {
    if (isa == Isa::avx512) *out = avx512::dot_simd(a, b, n);
    else if (isa == Isa::avx2) *out = avx2::dot_simd(a, b, n);
    else return false;
    return true;
}

bool dots_x86(Isa isa, const float* a, const float* b, size_t stride, size_t rows, size_t n, float* out) {
    if (isa == Isa::avx512) avx512::dots_simd(a, b, stride, rows, n, out);
    else if (isa == Isa::avx2) avx2::dots_simd(a, b, stride, rows, n, out);
    else return false;
    return true;
}

bool axpys_x86(Isa isa, const float* a, const float* x, size_t stride, size_t rows, float* y, size_t n) {
    if (isa == Isa::avx512) avx512::axpys_simd(a, x, stride, rows, y, n);
    else if (isa == Isa::avx2) avx2::axpys_simd(a, x, stride, rows, y, n);
    else return false;
    return true;
}

bool axpy_x86(Isa isa, float a, const float* x, float* y, size_t n) {
    if (isa == Isa::avx512) avx512::axpy_simd(a, x, y, n);
    else if (isa == Isa::avx2) avx2::axpy_simd(a, x, y, n);
    else return false;
    return true;
}

}  // namespace waste::kernels

#endif  // WASTE_X86_SIMD
