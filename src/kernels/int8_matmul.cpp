#include "kernels/int8_matmul.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "format/f16.h"
#include "kernels/isa_kernels.h"
#include "kernels/vq_matmul.h"
#include "platform/thread_scratch.h"

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

namespace {

inline size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

// One row or token of values to int8 with the shared scale of `count`
// values: round(v · (127 / max|v|)) (nearest, ties to even: lrintf here,
// cvtps2dq in the SIMD bodies). Returns max|v| / 127 (0 for an all-zero row).
float quantize_span(const float* v, size_t count, int8_t* q) {
    float top = 0;
    for (size_t i = 0; i < count; ++i) top = std::max(top, std::fabs(v[i]));
    if (top == 0) {
        std::memset(q, 0, count);
        return 0;
    }
    const float inverse = 127.0f / top;
    for (size_t i = 0; i < count; ++i) q[i] = static_cast<int8_t>(std::lrintf(v[i] * inverse));
    return top / 127.0f;
}

void int8_matmul_rows_scalar(const Int8Matrix& m, const int8_t* xq, size_t ldq, const float* xs, size_t tokens, float* y,
                             size_t ldy, size_t row_begin, size_t row_end) {
    const size_t ld = m.ld(), groups = m.groups();
    for (size_t r = row_begin; r < row_end; ++r) {
        const int8_t* w = m.q + r * ld;
        for (size_t t = 0; t < tokens; ++t) {
            const int8_t* x = xq + t * ldq;
            float acc = 0;
            for (size_t g = 0; g < groups; ++g) {
                int32_t dot = 0;
                for (size_t c = g * int8_group; c < std::min((g + 1) * int8_group, ld); ++c) dot += x[c] * w[c];
                acc += rounded(xs[t * groups + g] * static_cast<float>(dot));
            }
            y[t * ldy + r] = m.scale[r] * acc;
        }
    }
}

#if WASTE_X86_SIMD
WASTE_TARGET_BEGIN("avx2,fma,f16c")

// AVX2: |x| times w carrying x's sign (vpsignb), so the pairwise byte
// multiply-add (at most 2 · 127 · 127) never saturates; then pairs of int16
// to int32. 4 rows × 2 tokens at a time.
namespace avx2 {

inline int32_t hsum(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtsi128_si32(s);
}

template <int TB>
void tile(const Int8Matrix& m, const int8_t* xq, size_t ldq, const float* xs, size_t t0, size_t r0, size_t rows, float* y,
          size_t ldy) {
    constexpr int R = 4;
    const size_t ld = m.ld(), groups = m.groups();
    const __m256i ones = _mm256_set1_epi16(1);
    float acc[R][TB] = {};
    for (size_t g = 0; g < groups; ++g) {
        __m256i dot[R][TB];
        for (int k = 0; k < R; ++k)
            for (int j = 0; j < TB; ++j) dot[k][j] = _mm256_setzero_si256();
        for (size_t c = g * int8_group; c < std::min((g + 1) * int8_group, ld); c += 32) {
            __m256i x[TB], ax[TB];
            for (int j = 0; j < TB; ++j) {
                x[j] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq + (t0 + j) * ldq + c));
                ax[j] = _mm256_abs_epi8(x[j]);
            }
            for (int k = 0; k < R; ++k) {
                const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(m.q + (r0 + k) * ld + c));
                for (int j = 0; j < TB; ++j) {
                    const __m256i pairs = _mm256_maddubs_epi16(ax[j], _mm256_sign_epi8(w, x[j]));
                    dot[k][j] = _mm256_add_epi32(dot[k][j], _mm256_madd_epi16(pairs, ones));
                }
            }
        }
        for (int k = 0; k < R; ++k)
            for (int j = 0; j < TB; ++j) {
                float product = xs[(t0 + j) * groups + g] * static_cast<float>(hsum(dot[k][j]));
                __asm__("" : "+x"(product));  // rounded, never fused into the add
                acc[k][j] += product;
            }
    }
    for (size_t k = 0; k < rows; ++k)
        for (int j = 0; j < TB; ++j) y[(t0 + j) * ldy + r0 + k] = m.scale[r0 + k] * acc[k][j];
}

}  // namespace avx2
WASTE_TARGET_END

WASTE_TARGET_BEGIN("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")

// AVX-512 VNNI: vpdpbusd multiplies unsigned by signed bytes, so the
// activations go in as x + 128 and each group's dot loses 128 · Σ q of the
// row's group (stored with the matrix). 4 rows × 4 tokens of int32 sums in
// 16 registers; at each group's end the 16 are reduced to one vector
// (lane 4k + j: row k, token j) and scaled in f32 lane by lane.
namespace vnni {

template <int TB>
void tile(const Int8Matrix& m, const int8_t* xq, size_t ldq, const float* xs, size_t t0, size_t r0, size_t rows, float* y,
          size_t ldy) {
    constexpr int R = 4;
    const size_t ld = m.ld(), groups = m.groups();
    const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
    const __m512i row_of_lane = _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0);
    const __m512i token_of_lane = _mm512_set_epi32(3, 2, 1, 0, 3, 2, 1, 0, 3, 2, 1, 0, 3, 2, 1, 0);
    __m512 acc = _mm512_setzero_ps();
    for (size_t g = 0; g < groups; ++g) {
        __m512i dot[R * 4];
        for (int i = 0; i < R * 4; ++i) dot[i] = _mm512_setzero_si512();
        for (size_t c = g * int8_group; c < std::min((g + 1) * int8_group, ld); c += 64) {
            // the first token block streams the four rows from DRAM (later
            // blocks find them in L1): the rows two tiles on, into L2 — the
            // row loads were the stalls
            if (t0 == 0)
                for (int k = 0; k < R; ++k) _mm_prefetch(reinterpret_cast<const char*>(m.q + (r0 + 2 * R + k) * ld + c), _MM_HINT_T1);
            __m512i x[TB];
            for (int j = 0; j < TB; ++j)
                x[j] = _mm512_xor_si512(_mm512_loadu_si512(xq + (t0 + j) * ldq + c), flip);
            for (int k = 0; k < R; ++k) {
                const __m512i w = _mm512_loadu_si512(m.q + (r0 + k) * ld + c);
                for (int j = 0; j < TB; ++j) dot[k * 4 + j] = _mm512_dpbusd_epi32(dot[k * 4 + j], x[j], w);
            }
        }
        // Σ q of the four rows' group, to lanes 4k + j
        const __m512i sums = _mm512_permutexvar_epi32(
            row_of_lane, _mm512_castsi128_si512(_mm_set_epi32(m.group_sum[(r0 + 3) * groups + g], m.group_sum[(r0 + 2) * groups + g],
                                                              m.group_sum[(r0 + 1) * groups + g], m.group_sum[r0 * groups + g])));
        const __m512i exact = _mm512_sub_epi32(int8_reduce16(dot), _mm512_slli_epi32(sums, 7));
        float token_scale[4] = {};
        for (int j = 0; j < TB; ++j) token_scale[j] = xs[(t0 + j) * groups + g];
        const __m512 scales = _mm512_permutexvar_ps(token_of_lane, _mm512_castps128_ps512(_mm_loadu_ps(token_scale)));
        __m512 product = _mm512_mul_ps(scales, _mm512_cvtepi32_ps(exact));
        __asm__("" : "+v"(product));  // rounded, never fused into the add
        acc = _mm512_add_ps(acc, product);
    }
    alignas(64) float out[16];
    _mm512_store_ps(out, acc);
    for (size_t k = 0; k < rows; ++k)
        for (int j = 0; j < TB; ++j) y[(t0 + j) * ldy + r0 + k] = m.scale[r0 + k] * out[k * 4 + j];
}

// quantize_span's 16-lane body (the same max, products and rounding) and the
// group sums by vpdpbusd against ones.
float quantize_span(const float* v, size_t count, int8_t* q) {
    __m512 top16 = _mm512_setzero_ps();
    size_t i = 0;
    for (; i + 16 <= count; i += 16) top16 = _mm512_max_ps(top16, _mm512_abs_ps(_mm512_loadu_ps(v + i)));
    float top = _mm512_reduce_max_ps(top16);
    for (size_t j = i; j < count; ++j) top = std::max(top, std::fabs(v[j]));
    if (top == 0) {
        std::memset(q, 0, count);
        return 0;
    }
    const float inverse = 127.0f / top;
    const __m512 scale = _mm512_set1_ps(inverse);
    for (i = 0; i + 16 <= count; i += 16)
        _mm_storeu_si128(reinterpret_cast<__m128i*>(q + i),
                         _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(v + i), scale))));
    for (; i < count; ++i) q[i] = static_cast<int8_t>(std::lrintf(v[i] * inverse));
    return top / 127.0f;
}

int32_t byte_sum(const int8_t* q, size_t count) {  // count: a multiple of 64
    const __m512i ones = _mm512_set1_epi8(1);
    __m512i sum = _mm512_setzero_si512();
    for (size_t c = 0; c < count; c += 64) sum = _mm512_dpbusd_epi32(sum, ones, _mm512_loadu_si512(q + c));
    return _mm512_reduce_add_epi32(sum);
}

}  // namespace vnni
WASTE_TARGET_END

template <int TB>
void run_tile(bool vnni_body, const Int8Matrix& m, const int8_t* xq, size_t ldq, const float* xs, size_t t0, size_t r0,
              size_t rows, float* y, size_t ldy) {
    if (vnni_body) vnni::tile<TB>(m, xq, ldq, xs, t0, r0, rows, y, ldy);
    else avx2::tile<TB>(m, xq, ldq, xs, t0, r0, rows, y, ldy);
}

namespace avx2 {
WASTE_TARGET_BEGIN("avx2,fma,f16c")
// quantize_span's AVX2 body: the same max (exact in any order), the same
// products, cvtps2dq's nearest-even rounding for lrintf's.
float quantize_span(const float* v, size_t count, int8_t* q) {
    const __m256 magnitude = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    __m256 top8 = _mm256_setzero_ps();
    size_t i = 0;
    for (; i + 8 <= count; i += 8) top8 = _mm256_max_ps(top8, _mm256_and_ps(_mm256_loadu_ps(v + i), magnitude));
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, top8);
    float top = 0;
    for (float lane : lanes) top = std::max(top, lane);
    for (size_t j = i; j < count; ++j) top = std::max(top, std::fabs(v[j]));
    if (top == 0) {
        std::memset(q, 0, count);
        return 0;
    }
    const float inverse = 127.0f / top;
    const __m256 scale = _mm256_set1_ps(inverse);
    const __m256i gather_low = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (i = 0; i + 8 <= count; i += 8) {
        const __m256i n = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(v + i), scale));
        const __m256i words = _mm256_packs_epi32(n, n);         // per 128-bit lane: n0..n3 twice
        const __m256i bytes = _mm256_packs_epi16(words, words);  // bytes 0..3 of each lane
        const __m256i low = _mm256_permutevar8x32_epi32(bytes, gather_low);
        _mm_storel_epi64(reinterpret_cast<__m128i*>(q + i), _mm256_castsi256_si128(low));
    }
    for (; i < count; ++i) q[i] = static_cast<int8_t>(std::lrintf(v[i] * inverse));
    return top / 127.0f;
}

// Σ q[c] over count bytes (a multiple of 32).
int32_t byte_sum(const int8_t* q, size_t count) {
    const __m256i ones8 = _mm256_set1_epi8(1), ones16 = _mm256_set1_epi16(1);
    __m256i sum = _mm256_setzero_si256();
    for (size_t c = 0; c < count; c += 32) {
        const __m256i pairs = _mm256_maddubs_epi16(ones8, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + c)));
        sum = _mm256_add_epi32(sum, _mm256_madd_epi16(pairs, ones16));
    }
    return hsum(sum);
}
WASTE_TARGET_END
}  // namespace avx2

bool int8_matmul_rows_x86(Isa isa, const Int8Matrix& m, const int8_t* xq, size_t ldq, const float* xs, size_t tokens,
                          float* y, size_t ldy, size_t row_begin, size_t row_end) {
    if (isa == Isa::scalar || !isa_runs(isa)) return false;
    const bool vnni_body = isa == Isa::avx512 && int8_vnni_path();
    const size_t step = vnni_body ? 4 : 2;  // tokens a tile
    for (size_t r = row_begin; r < row_end; r += 4) {
        const size_t rows = std::min<size_t>(4, row_end - r);
        size_t t = 0;
        for (; t + step <= tokens; t += step) {
            if (vnni_body) run_tile<4>(true, m, xq, ldq, xs, t, r, rows, y, ldy);
            else run_tile<2>(false, m, xq, ldq, xs, t, r, rows, y, ldy);
        }
        switch (tokens - t) {
            case 3: run_tile<3>(vnni_body, m, xq, ldq, xs, t, r, rows, y, ldy); break;
            case 2: run_tile<2>(vnni_body, m, xq, ldq, xs, t, r, rows, y, ldy); break;
            case 1: run_tile<1>(vnni_body, m, xq, ldq, xs, t, r, rows, y, ldy); break;
            default: break;
        }
    }
    return true;
}
#endif

}  // namespace

#if WASTE_X86_SIMD
namespace {
bool simd_quantize(Isa isa) { return (isa == Isa::avx2 || isa == Isa::avx512) && isa_runs(isa); }
}  // namespace
#endif

float quantize_int8_values(Isa isa, const float* v, size_t count, int8_t* q) {
#if WASTE_X86_SIMD
    if (isa == Isa::avx512 && int8_vnni_path()) return vnni::quantize_span(v, count, q);
    if (simd_quantize(isa)) return avx2::quantize_span(v, count, q);
#endif
    (void)isa;
    return quantize_span(v, count, q);
}

int32_t int8_byte_sum(Isa isa, const int8_t* q, size_t count) {
#if WASTE_X86_SIMD
    if (isa == Isa::avx512 && int8_vnni_path() && count % 64 == 0) return vnni::byte_sum(q, count);
    if (simd_quantize(isa) && count % 32 == 0) return avx2::byte_sum(q, count);
#endif
    (void)isa;
    int32_t sum = 0;
    for (size_t c = 0; c < count; ++c) sum += q[c];
    return sum;
}

size_t int8_matrix_bytes(size_t rows, size_t cols) {
    const Int8Matrix shape{rows, cols};
    const size_t padded = rows + int8_row_pad;
    return round_up(padded * shape.ld(), 64) + round_up(padded * sizeof(float), 64) +
           round_up(padded * shape.groups() * sizeof(int32_t), 64);
}

Int8Matrix int8_matrix_view(uint8_t* buffer, size_t rows, size_t cols) {
    Int8Matrix m{rows, cols};
    const size_t padded = rows + int8_row_pad;
    m.q = reinterpret_cast<int8_t*>(buffer);
    uint8_t* next = buffer + round_up(padded * m.ld(), 64);
    m.scale = reinterpret_cast<float*>(next);
    next += round_up(padded * sizeof(float), 64);
    m.group_sum = reinterpret_cast<int32_t*>(next);
    // the padding: rows past the end and columns past cols are zeros
    std::memset(m.q + rows * m.ld(), 0, int8_row_pad * m.ld());
    std::memset(m.scale + rows, 0, int8_row_pad * sizeof(float));
    std::memset(m.group_sum + rows * m.groups(), 0, int8_row_pad * m.groups() * sizeof(int32_t));
    return m;
}

void decode_vq_int8_rows(Isa isa, const VqTableShape& shape, bool packed6, const uint8_t* indices, const uint8_t* scales_f16,
                         const float* books, const Int8Matrix& m, size_t row_begin, size_t row_end) {
    const size_t cols = static_cast<size_t>(shape.positions) * shape.vec_dim, ld = m.ld(), groups = m.groups();
    constexpr size_t batch = 4;  // rows decoded at a time: 4 f32 rows of 1024 stay in L1
    float* const weights = platform::thread_scratch(platform::ScratchSlot::vq_int8_rows, batch * ld);
    for (size_t r = row_begin; r < row_end; r += batch) {
        const size_t n = std::min(batch, row_end - r);
        vq_dequantize_rows(isa, shape, packed6, indices, books, r, n, weights, ld);
        for (size_t k = 0; k < n; ++k) {
            int8_t* q = m.q + (r + k) * ld;
            uint16_t bits;
            std::memcpy(&bits, scales_f16 + 2 * (r + k), 2);
            m.scale[r + k] = format::f16_to_f32(bits) * quantize_int8_values(isa, weights + k * ld, cols, q);
            std::memset(q + cols, 0, ld - cols);
            for (size_t g = 0; g < groups; ++g) {
                const size_t begin = g * int8_group;
                m.group_sum[(r + k) * groups + g] = int8_byte_sum(isa, q + begin, std::min(begin + int8_group, ld) - begin);
            }
        }
    }
}

void quantize_int8_activations(Isa isa, const float* x, size_t ldx, size_t tokens, size_t cols, int8_t* xq, size_t ldq,
                               float* xs) {
    const size_t groups = (cols + int8_group - 1) / int8_group;
    for (size_t t = 0; t < tokens; ++t) {
        for (size_t g = 0; g < groups; ++g) {
            const size_t begin = g * int8_group, count = std::min(cols, begin + int8_group) - begin;
            xs[t * groups + g] = quantize_int8_values(isa, x + t * ldx + begin, count, xq + t * ldq + begin);
        }
        std::memset(xq + t * ldq + cols, 0, ldq - cols);
    }
}

void int8_matmul_rows(Isa isa, const Int8Matrix& m, const int8_t* xq, size_t ldq, const float* xs, size_t tokens, float* y,
                      size_t ldy, size_t row_begin, size_t row_end) {
#if WASTE_X86_SIMD
    if (int8_matmul_rows_x86(isa, m, xq, ldq, xs, tokens, y, ldy, row_begin, row_end)) return;
#else
    (void)isa;
#endif
    int8_matmul_rows_scalar(m, xq, ldq, xs, tokens, y, ldy, row_begin, row_end);
}

bool int8_vnni_path() {
#if WASTE_X86_SIMD
    static const bool has = [] {
        __builtin_cpu_init();
        return best_isa() == Isa::avx512 && __builtin_cpu_supports("avx512vnni");
    }();
    return has;
#else
    return false;
#endif
}

}  // namespace waste::kernels
