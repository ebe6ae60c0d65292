// vq_search_avx512.cpp — the AVX-512 search paths (vq_search.h): the
// exhaustive fma chain on 16 centroids per register, and the VNNI-screened
// search. Compiled with per-function target attributes so the library still
// runs on a CPU without AVX-512; vq_search.cpp dispatches here only when the
// CPU has it.
#include "convert/vq_search_paths.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/isa.h"

#if WASTE_X86_SIMD
#include <immintrin.h>

#include "platform/target_region.h"
#endif

namespace waste::convert::detail {

#if WASTE_X86_SIMD
// The exhaustive path needs AVX-512F only (what avx512_search_available()
// checks): no BW/VL/DQ instruction may be generated in this region.
WASTE_TARGET_BEGIN("avx512f,fma")

namespace {

constexpr float inf = std::numeric_limits<float>::infinity();

// Centroid indices 0..255, read as the memory operand of a masked blend:
// no register holds them.
alignas(64) constexpr int32_t index_table[256] = {
    0,   1,   2,   3,   4,   5,   6,   7,   8,   9,   10,  11,  12,  13,  14,  15,  16,  17,  18,  19,  20,  21,
    22,  23,  24,  25,  26,  27,  28,  29,  30,  31,  32,  33,  34,  35,  36,  37,  38,  39,  40,  41,  42,  43,
    44,  45,  46,  47,  48,  49,  50,  51,  52,  53,  54,  55,  56,  57,  58,  59,  60,  61,  62,  63,  64,  65,
    66,  67,  68,  69,  70,  71,  72,  73,  74,  75,  76,  77,  78,  79,  80,  81,  82,  83,  84,  85,  86,  87,
    88,  89,  90,  91,  92,  93,  94,  95,  96,  97,  98,  99,  100, 101, 102, 103, 104, 105, 106, 107, 108, 109,
    110, 111, 112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125, 126, 127, 128, 129, 130, 131,
    132, 133, 134, 135, 136, 137, 138, 139, 140, 141, 142, 143, 144, 145, 146, 147, 148, 149, 150, 151, 152, 153,
    154, 155, 156, 157, 158, 159, 160, 161, 162, 163, 164, 165, 166, 167, 168, 169, 170, 171, 172, 173, 174, 175,
    176, 177, 178, 179, 180, 181, 182, 183, 184, 185, 186, 187, 188, 189, 190, 191, 192, 193, 194, 195, 196, 197,
    198, 199, 200, 201, 202, 203, 204, 205, 206, 207, 208, 209, 210, 211, 212, 213, 214, 215, 216, 217, 218, 219,
    220, 221, 222, 223, 224, 225, 226, 227, 228, 229, 230, 231, 232, 233, 234, 235, 236, 237, 238, 239, 240, 241,
    242, 243, 244, 245, 246, 247, 248, 249, 250, 251, 252, 253, 254, 255};

// One vector's running per-lane (first minimum, its index), folded in
// ascending centroid order: a lane takes a distance only when it is strictly
// smaller, so each lane holds the first minimum of its centroids (and index 0,
// value +inf when no distance was below +inf: NaN and +inf never win).
// (Plain members, no constructor: an implicit one would be compiled outside
// this target region.)
struct Running {
    __m512 best;
    __m512i index;
};

inline void start(Running& r) {
    r.best = _mm512_set1_ps(inf);
    r.index = _mm512_setzero_si512();
}

inline void fold(Running& r, __m512 d, int e) {
    const __mmask16 less = _mm512_cmp_ps_mask(d, r.best, _CMP_LT_OQ);
    r.best = _mm512_mask_mov_ps(r.best, less, d);
    r.index = _mm512_mask_mov_epi32(r.index, less, _mm512_load_si512(index_table + e));
}

// The smallest value and, among lanes equal to it, the smallest index: the
// scalar loop's first minimum (0 when every lane is still +inf).
inline uint8_t answer(const Running& r) {
    // (Shuffles rather than _mm512_reduce_*: GCC 12's expansion of those
    // warns about an uninitialised operand.) best holds no NaN.
    __m512 m = _mm512_min_ps(r.best, _mm512_shuffle_f32x4(r.best, r.best, _MM_SHUFFLE(1, 0, 3, 2)));
    m = _mm512_min_ps(m, _mm512_shuffle_f32x4(m, m, _MM_SHUFFLE(2, 3, 0, 1)));
    m = _mm512_min_ps(m, _mm512_permute_ps(m, _MM_SHUFFLE(1, 0, 3, 2)));
    m = _mm512_min_ps(m, _mm512_permute_ps(m, _MM_SHUFFLE(2, 3, 0, 1)));
    const __mmask16 at = _mm512_cmp_ps_mask(r.best, m, _CMP_EQ_OQ);
    __m512i k = _mm512_mask_mov_epi32(_mm512_set1_epi32(256), at, r.index);
    k = _mm512_min_epi32(k, _mm512_shuffle_i32x4(k, k, _MM_SHUFFLE(1, 0, 3, 2)));
    k = _mm512_min_epi32(k, _mm512_shuffle_i32x4(k, k, _MM_SHUFFLE(2, 3, 0, 1)));
    k = _mm512_min_epi32(k, _mm512_shuffle_epi32(k, static_cast<_MM_PERM_ENUM>(_MM_SHUFFLE(1, 0, 3, 2))));
    k = _mm512_min_epi32(k, _mm512_shuffle_epi32(k, static_cast<_MM_PERM_ENUM>(_MM_SHUFFLE(2, 3, 0, 1))));
    return static_cast<uint8_t>(_mm_cvtsi128_si32(_mm512_castsi512_si128(k)));
}

// Centroids e..e+16*chains-1 for `vecs` vectors at once: each column load
// feeds every vector's chain (loads, not FMAs, bound a one-vector loop; 4
// vectors x 4 chains measured fastest of the shapes tried:
// docs/bench-log/conversion.md, "Zen 5, AVX-512"). x' is broadcast from a
// small array as needed (4 vectors' 32 values do not all fit in registers
// beside 16 chains and 4 minima).
// Every chain is the scalar formula's: n[e], then x'0..x'7 in order.
template <int vecs, int chains>
inline void step(const float* const* columns, const float* n, int e, const float (*x)[8], Running* r) {
    __m512 d[vecs][chains];
    for (int c = 0; c < chains; ++c) {
        const __m512 norm = _mm512_loadu_ps(n + e + 16 * c);
        for (int v = 0; v < vecs; ++v) d[v][c] = norm;
    }
    for (int j = 0; j < 8; ++j)
        for (int c = 0; c < chains; ++c) {
            const __m512 col = _mm512_loadu_ps(columns[j] + e + 16 * c);
            for (int v = 0; v < vecs; ++v) d[v][c] = _mm512_fmadd_ps(_mm512_set1_ps(x[v][j]), col, d[v][c]);
        }
    for (int c = 0; c < chains; ++c)
        for (int v = 0; v < vecs; ++v) fold(r[v], d[v][c], e + 16 * c);
}

}  // namespace

void nearest_avx512(const SearchBook& book, const float* vectors, size_t count, uint8_t* out) {
    constexpr int vecs = 4;
    const int padded = book.padded();  // a multiple of 32, at most 256
    const float* n = book.norms();
    const float* columns[8];
    for (int j = 0; j < 8; ++j) columns[j] = book.column(j);
    for (size_t i = 0; i < count; i += vecs) {
        // A last group of fewer vectors repeats its last one.
        alignas(64) float x[vecs][8];
        for (int v = 0; v < vecs; ++v) {
            const float* src = vectors + std::min(i + v, count - 1) * vq_dim;
            for (int j = 0; j < 8; ++j) x[v][j] = -2.0f * src[j];
        }
        Running r[vecs];
        for (int v = 0; v < vecs; ++v) start(r[v]);
        int e = 0;
        for (; e + 64 <= padded; e += 64) step<vecs, 4>(columns, n, e, x, r);
        if (e < padded) step<vecs, 2>(columns, n, e, x, r);
        for (int v = 0; v < vecs && i + v < count; ++v) out[i + v] = answer(r[v]);
    }
}

WASTE_TARGET_END

// The screened path: AVX-512F/BW/VL and VNNI (avx512_screen_available()).
WASTE_TARGET_BEGIN("avx512f,avx512bw,avx512vl,avx512vnni,fma")

namespace {

// x to 8 bits: vpdpbusd adds u8 x s8 products straight into i32, so there is
// no i16 pair sum to saturate (the AVX2 screen stops at 63 levels for that).
constexpr int x_levels = 127;

inline float horizontal_max(__m256 v) {
    v = _mm256_max_ps(v, _mm256_permute2f128_ps(v, v, 1));
    v = _mm256_max_ps(v, _mm256_shuffle_ps(v, v, _MM_SHUFFLE(1, 0, 3, 2)));
    v = _mm256_max_ps(v, _mm256_shuffle_ps(v, v, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm256_cvtss_f32(v);
}

inline float horizontal_min(__m512 v) {
    v = _mm512_min_ps(v, _mm512_shuffle_f32x4(v, v, _MM_SHUFFLE(1, 0, 3, 2)));
    v = _mm512_min_ps(v, _mm512_shuffle_f32x4(v, v, _MM_SHUFFLE(2, 3, 0, 1)));
    v = _mm512_min_ps(v, _mm512_permute_ps(v, _MM_SHUFFLE(1, 0, 3, 2)));
    v = _mm512_min_ps(v, _mm512_permute_ps(v, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm512_cvtss_f32(v);
}

// The smallest f32 >= limit (a finite double).
inline float round_up(double limit) {
    float t = static_cast<float>(limit);
    if (static_cast<double>(t) < limit) {
        uint32_t bits;
        std::memcpy(&bits, &t, sizeof bits);
        if ((bits & 0x7FFFFFFFu) == 0) bits = 1;  // ±0 -> the smallest positive subnormal
        else if (bits >> 31) --bits;              // negative: toward zero
        else ++bits;
        std::memcpy(&t, &bits, sizeof t);
    }
    return t;
}

}  // namespace

// Screened, as nearest_screened_avx2 (vq_search.cpp derives the bound), with
// x to 127 levels and the int8 dot products by vpdpbusd: two per 16
// centroids. Candidates are visited in ascending index order, so the first
// strictly smaller exact distance is the scalar loop's answer; a lone
// candidate is the answer without its exact distance (every other centroid's
// exact distance is proven larger).
void nearest_screened_avx512(const SearchBook& book, const float* vectors, size_t count, uint8_t* out,
                             SearchStats* stats) {
    if (!book.screenable()) {
        nearest_avx512(book, vectors, count, out);
        if (stats) {
            stats->exhaustive_vectors += count;
            stats->exact_evaluations += count * static_cast<uint64_t>(book.padded());
        }
        return;
    }
    const int blocks = book.padded() / 16;  // even, at most 16
    const int words = (blocks + 3) / 4;     // 64 candidate bits each
    const float* n = book.norms();
    const uint8_t* codes = book.screen_codes16();
    const float* columns[8];
    for (int j = 0; j < 8; ++j) columns[j] = book.column(j);
    const double sc = book.screen_scale();
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
    alignas(64) float scores[256];
    uint64_t evaluations = 0, exhaustive = 0;
    for (size_t i = 0; i < count; ++i) {
        const float* v = vectors + i * vq_dim;
        const __m256 x = _mm256_loadu_ps(v);
        const __m256 ax = _mm256_and_ps(x, abs_mask);
        // NaN or ±inf anywhere (max_ps would drop a NaN), or |x|max out of range: exhaustive.
        const bool not_finite =
            _mm256_movemask_ps(_mm256_cmp_ps(ax, _mm256_set1_ps(std::numeric_limits<float>::max()), _CMP_NLE_UQ)) != 0;
        const float xm = horizontal_max(ax);
        if (not_finite || !(xm >= screen_range_lo && xm <= screen_range_hi)) {
            nearest_avx512(book, v, 1, out + i);
            ++exhaustive;
            continue;
        }
        const float sx = xm / static_cast<float>(x_levels);
        __m256 qf = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(static_cast<float>(x_levels) / xm)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        qf = _mm256_min_ps(_mm256_max_ps(qf, _mm256_set1_ps(-x_levels)), _mm256_set1_ps(x_levels));
        const __m128i q8 = _mm256_cvtepi32_epi8(_mm256_cvtps_epi32(qf));  // x0..x7 as i8
        const __m512i x_lo = _mm512_set1_epi32(_mm_cvtsi128_si32(q8));
        const __m512i x_hi = _mm512_set1_epi32(_mm_extract_epi32(q8, 1));
        // |x - sx xq|^2 and |x|^2 together.
        const __m256 diff = _mm256_sub_ps(x, _mm256_mul_ps(qf, _mm256_set1_ps(sx)));
        __m256 sums = _mm256_hadd_ps(_mm256_mul_ps(diff, diff), _mm256_mul_ps(x, x));
        sums = _mm256_hadd_ps(sums, sums);
        const __m128 both = _mm_add_ps(_mm256_castps256_ps128(sums), _mm256_extractf128_ps(sums, 1));
        alignas(16) float sq[4];
        _mm_store_ps(sq, both);
        // f32 rounding of those sums and of sx*xq: relative 2^-10 and absolute 2^-20 |x|max cover it.
        const double ex = std::sqrt(static_cast<double>(sq[0])) * (1 + 0x1p-10) + 0x1p-20 * xm;
        const double xn = std::sqrt(static_cast<double>(sq[1])) * (1 + 0x1p-10);
        const float unit = static_cast<float>(2.0 * sx * sc);
        const double delta = screen_delta(book, ex, xn, unit, x_levels);
        // Every score.
        const __m512 neg_unit = _mm512_set1_ps(-unit);
        __m512 low = _mm512_set1_ps(inf);
        for (int b = 0; b < blocks; ++b) {
            const __m512i c_lo = _mm512_loadu_si512(codes + b * 128);
            const __m512i c_hi = _mm512_loadu_si512(codes + b * 128 + 64);
            const __m512i dot =
                _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), c_lo, x_lo), c_hi, x_hi);
            const __m512 score = _mm512_fmadd_ps(neg_unit, _mm512_cvtepi32_ps(dot), _mm512_loadu_ps(n + b * 16));
            _mm512_store_ps(scores + b * 16, score);
            low = _mm512_min_ps(low, score);
        }
        const __m512 t = _mm512_set1_ps(round_up(static_cast<double>(horizontal_min(low)) + 2 * delta));
        // The candidates: bit e % 64 of word e / 64.
        uint64_t masks[4] = {0, 0, 0, 0};
        int candidates = 0;
        for (int w = 0; w < words; ++w) {
            for (int k = 0; k < 4 && 4 * w + k < blocks; ++k)
                masks[w] |= static_cast<uint64_t>(_mm512_cmp_ps_mask(_mm512_load_ps(scores + 64 * w + 16 * k), t,
                                                                     _CMP_LE_OQ))
                            << (16 * k);
            candidates += __builtin_popcountll(masks[w]);
        }
        if (candidates == 1) {
            int w = 0;
            while (masks[w] == 0) ++w;
            out[i] = static_cast<uint8_t>(64 * w + __builtin_ctzll(masks[w]));
            continue;
        }
        float xs[vq_dim];
        for (int j = 0; j < vq_dim; ++j) xs[j] = -2.0f * v[j];
        float best = inf;
        int best_e = 0;
        for (int w = 0; w < words; ++w) {
            uint64_t mask = masks[w];
            while (mask != 0) {
                const int e = 64 * w + __builtin_ctzll(mask);
                mask &= mask - 1;
                float d = n[e];
                for (int j = 0; j < vq_dim; ++j) d = std::fma(xs[j], columns[j][e], d);
                ++evaluations;
                if (d < best) {
                    best = d;
                    best_e = e;
                }
            }
        }
        out[i] = static_cast<uint8_t>(best_e);
    }
    if (stats) {
        stats->exact_evaluations += evaluations + exhaustive * static_cast<uint64_t>(book.padded());
        stats->exhaustive_vectors += exhaustive;
    }
}

WASTE_TARGET_END
#endif

}  // namespace waste::convert::detail
