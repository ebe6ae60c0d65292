#include "convert/vq_search.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "convert/vq_search_paths.h"
#include "kernels/isa.h"
#include "platform/error.h"

#if WASTE_X86_SIMD
#include <immintrin.h>

#include "platform/target_region.h"
#endif

namespace waste::convert {
namespace {

constexpr int entry_block = 32;  // the AVX2 loops take 4 groups of 8 centroids at a time
constexpr float inf = std::numeric_limits<float>::infinity();

// The screened search's int8 codes. x codes stay within [-63, 63] and centroid
// codes within [0, 255] (offset 128), so a vpmaddubsw pair sum is at most
// 2 * 255 * 63 = 32130 and never saturates its i16. (x within [-31, 31] would
// let one vpaddw replace a vpmaddwd; measured, the extra candidates of the
// coarser x cost more than the multiply saved.)
[[maybe_unused]] constexpr int x_levels = 63;  // (used by the AVX2 code only)
constexpr int c_levels = 127;
constexpr int c_offset = 128;
constexpr double range_lo = detail::screen_range_lo, range_hi = detail::screen_range_hi;

void nearest_scalar(const SearchBook& book, const float* vectors, size_t count, uint8_t* out) {
    const int padded = book.padded();
    const float* n = book.norms();
    for (size_t i = 0; i < count; ++i) {
        float x[vq_dim];
        for (int j = 0; j < vq_dim; ++j) x[j] = -2.0f * vectors[i * vq_dim + j];
        float best = inf;
        int best_index = 0;
        for (int e = 0; e < padded; ++e) {
            float d = n[e];
            for (int j = 0; j < vq_dim; ++j) d = std::fma(x[j], book.column(j)[e], d);
            if (d < best) {
                best = d;
                best_index = e;
            }
        }
        out[i] = static_cast<uint8_t>(best_index);
    }
}

#if WASTE_X86_SIMD
WASTE_TARGET_BEGIN("avx2,fma")

// The answer from per-lane (best value, best index) pairs that each hold
// their lane's first minimum: the smallest value and, among equal ones, the
// smallest index — the scalar loop's answer.
inline uint8_t reduce_lanes(__m256 best, __m256i best_index) {
    alignas(32) float values[8];
    alignas(32) int32_t indices[8];
    _mm256_store_ps(values, best);
    _mm256_store_si256(reinterpret_cast<__m256i*>(indices), best_index);
    int pick = 0;
    for (int l = 1; l < 8; ++l)
        if (values[l] < values[pick] || (values[l] == values[pick] && indices[l] < indices[pick])) pick = l;
    return static_cast<uint8_t>(indices[pick]);
}

// Folds 8 distances of centroids e..e+7 into the running pairs (ascending e).
inline void fold(__m256 d, int e, __m256& best, __m256i& best_index) {
    const __m256 less = _mm256_cmp_ps(d, best, _CMP_LT_OQ);
    best = _mm256_blendv_ps(best, d, less);
    const __m256i ids = _mm256_add_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(e));
    best_index = _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(best_index), _mm256_castsi256_ps(ids), less));
}

// Exhaustive: lanes are centroids, 4 independent fma chains (32 centroids)
// per step, each the scalar formula's chain.
inline uint8_t nearest_one_avx2(const SearchBook& book, const float* v) {
    const int padded = book.padded();
    const float* n = book.norms();
    __m256 x[vq_dim];
    for (int j = 0; j < vq_dim; ++j) x[j] = _mm256_set1_ps(-2.0f * v[j]);
    __m256 best = _mm256_set1_ps(inf);
    __m256i best_index = _mm256_setzero_si256();
    for (int e = 0; e < padded; e += entry_block) {
        __m256 d0 = _mm256_loadu_ps(n + e), d1 = _mm256_loadu_ps(n + e + 8);
        __m256 d2 = _mm256_loadu_ps(n + e + 16), d3 = _mm256_loadu_ps(n + e + 24);
        for (int j = 0; j < vq_dim; ++j) {
            const float* c = book.column(j);
            d0 = _mm256_fmadd_ps(x[j], _mm256_loadu_ps(c + e), d0);
            d1 = _mm256_fmadd_ps(x[j], _mm256_loadu_ps(c + e + 8), d1);
            d2 = _mm256_fmadd_ps(x[j], _mm256_loadu_ps(c + e + 16), d2);
            d3 = _mm256_fmadd_ps(x[j], _mm256_loadu_ps(c + e + 24), d3);
        }
        fold(d0, e, best, best_index);
        fold(d1, e + 8, best, best_index);
        fold(d2, e + 16, best, best_index);
        fold(d3, e + 24, best, best_index);
    }
    return reduce_lanes(best, best_index);
}

__attribute__((noinline)) void nearest_avx2(const SearchBook& book, const float* vectors, size_t count, uint8_t* out) {
    for (size_t i = 0; i < count; ++i) out[i] = nearest_one_avx2(book, vectors + i * vq_dim);
}

inline float horizontal_max(__m256 v) {
    v = _mm256_max_ps(v, _mm256_permute2f128_ps(v, v, 1));
    v = _mm256_max_ps(v, _mm256_shuffle_ps(v, v, _MM_SHUFFLE(1, 0, 3, 2)));
    v = _mm256_max_ps(v, _mm256_shuffle_ps(v, v, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm256_cvtss_f32(v);
}

inline float horizontal_min(__m256 v) {
    v = _mm256_min_ps(v, _mm256_permute2f128_ps(v, v, 1));
    v = _mm256_min_ps(v, _mm256_shuffle_ps(v, v, _MM_SHUFFLE(1, 0, 3, 2)));
    v = _mm256_min_ps(v, _mm256_shuffle_ps(v, v, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm256_cvtss_f32(v);
}

// Screened: see vq_search.h. Per vector, with sx = |x|max / 63, xq = round(x / sx)
// and the book's codes cq (c ~ sc * cq), the score of centroid e is
//     A(e) = fma(-unit, dot(code_e, xq), n[e]),   unit = f32(2 sx sc),
// which differs from the exact chain d(e) by a constant K (the code offset's
// 128 * sum(xq) * unit, the same for every e) plus at most
//     delta = 2 (|x - sx xq| max|c| + |sx xq| max|c - sc cq|)   int8 rounding (Cauchy-Schwarz)
//           + 9u (max n + 2 |x| max|c|)                        the f32 chain of d (8 fmas)
//           + u (max n + unit max|dot|) + u unit max|dotq|      the f32 score and unit
// (u = 2^-24), inflated for the f32 rounding of its own inputs. A centroid
// with A(e) > min A + 2 delta therefore has d(e) > d(argmin A) >= min d and
// cannot be the answer; the exact chain decides among the rest.
__attribute__((noinline)) void nearest_screened_avx2(const SearchBook& book, const float* vectors, size_t count,
                                                      uint8_t* out, SearchStats* stats) {
    if (!book.screenable()) {
        nearest_avx2(book, vectors, count, out);
        if (stats) {
            stats->exhaustive_vectors += count;
            stats->exact_evaluations += count * static_cast<uint64_t>(book.padded());
        }
        return;
    }
    const int blocks = book.padded() / 8;
    const float* n = book.norms();
    const uint8_t* codes = book.screen_codes();
    const double sc = book.screen_scale();
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
    const __m256i ones = _mm256_set1_epi16(1);
    alignas(32) float scores[256];
    uint64_t evaluations = 0, exhaustive = 0;
    for (size_t i = 0; i < count; ++i) {
        const float* v = vectors + i * vq_dim;
        const __m256 x = _mm256_loadu_ps(v);
        const __m256 ax = _mm256_and_ps(x, abs_mask);
        // NaN or ±inf anywhere (max_ps would drop a NaN), or |x|max out of range: exhaustive.
        const bool not_finite =
            _mm256_movemask_ps(_mm256_cmp_ps(ax, _mm256_set1_ps(std::numeric_limits<float>::max()), _CMP_NLE_UQ)) != 0;
        const float xm = horizontal_max(ax);
        if (not_finite || !(xm >= range_lo && xm <= range_hi)) {
            out[i] = nearest_one_avx2(book, v);
            ++exhaustive;
            continue;
        }
        const float sx = xm / static_cast<float>(x_levels);
        __m256 qf = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(static_cast<float>(x_levels) / xm)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        qf = _mm256_min_ps(_mm256_max_ps(qf, _mm256_set1_ps(-x_levels)), _mm256_set1_ps(x_levels));
        const __m256i q = _mm256_cvtps_epi32(qf);
        const __m256i q16 = _mm256_packs_epi32(q, q);     // [x0..3 x0..3 | x4..7 x4..7] as i16
        const __m256i q8 = _mm256_packs_epi16(q16, q16);  // [x0..3 ... | x4..7 ...] as i8
        const __m256i x_lo = _mm256_permutevar8x32_epi32(q8, _mm256_setzero_si256());
        const __m256i x_hi = _mm256_permutevar8x32_epi32(q8, _mm256_set1_epi32(4));
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
        const double delta = detail::screen_delta(book, ex, xn, unit, x_levels);
        // Pass 1: every score.
        const __m256 neg_unit = _mm256_set1_ps(-unit);
        __m256 low = _mm256_set1_ps(inf);
        for (int b = 0; b < blocks; ++b) {
            const __m256i c_lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + b * 64));
            const __m256i c_hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + b * 64 + 32));
            const __m256i dot = _mm256_add_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(c_lo, x_lo), ones),
                                                 _mm256_madd_epi16(_mm256_maddubs_epi16(c_hi, x_hi), ones));
            const __m256 s = _mm256_fmadd_ps(neg_unit, _mm256_cvtepi32_ps(dot), _mm256_loadu_ps(n + b * 8));
            _mm256_store_ps(scores + b * 8, s);
            low = _mm256_min_ps(low, s);
        }
        const double limit = static_cast<double>(horizontal_min(low)) + 2 * delta;
        float threshold = static_cast<float>(limit);
        if (static_cast<double>(threshold) < limit) threshold = std::nextafter(threshold, inf);
        const __m256 t = _mm256_set1_ps(threshold);
        float xs[vq_dim];
        for (int j = 0; j < vq_dim; ++j) xs[j] = -2.0f * v[j];
        // Pass 2: the candidates' mask, 32 centroids to a word (vpackssdw and
        // vpacksswb interleave 4 blocks by 128-bit half: byte k < 16 of a word
        // is block k / 4, lane k % 4; byte k >= 16 is block (k - 16) / 4, lane
        // 4 + k % 4), then the exact chain for each candidate.
        uint32_t masks[8];
        for (int w = 0; w < blocks / 4; ++w) {
            const float* s = scores + w * 32;
            const __m256i c01 = _mm256_packs_epi32(_mm256_castps_si256(_mm256_cmp_ps(_mm256_load_ps(s), t, _CMP_LE_OQ)),
                                                   _mm256_castps_si256(_mm256_cmp_ps(_mm256_load_ps(s + 8), t, _CMP_LE_OQ)));
            const __m256i c23 = _mm256_packs_epi32(_mm256_castps_si256(_mm256_cmp_ps(_mm256_load_ps(s + 16), t, _CMP_LE_OQ)),
                                                   _mm256_castps_si256(_mm256_cmp_ps(_mm256_load_ps(s + 24), t, _CMP_LE_OQ)));
            masks[w] = static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_packs_epi16(c01, c23)));
        }
        float best = inf;
        int best_e = 0;
        for (int w = 0; w < blocks / 4; ++w) {
            uint32_t mask = masks[w];
            while (mask != 0) {
                const int k = __builtin_ctz(mask);
                mask &= mask - 1;
                const int e = w * 32 + ((k & 15) >> 2) * 8 + (k >> 4) * 4 + (k & 3);
                float d = n[e];
                for (int j = 0; j < vq_dim; ++j) d = std::fma(xs[j], book.column(j)[e], d);
                ++evaluations;
                // Candidates come out of index order: the smaller index wins a tie, as in the scalar loop.
                if (d < best || (d == best && e < best_e)) {
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

}  // namespace

SearchBook::SearchBook(std::span<const float> centroids) {
    WASTE_CHECK(centroids.size() % vq_dim == 0);
    entries_ = static_cast<int>(centroids.size() / vq_dim);
    WASTE_CHECK(entries_ >= 1 && entries_ <= 256);
    padded_ = (entries_ + entry_block - 1) / entry_block * entry_block;
    centroids_.assign(centroids.begin(), centroids.end());
    columns_.assign(static_cast<size_t>(vq_dim) * padded_, 0.0f);
    norms_.assign(static_cast<size_t>(padded_), inf);
    bool finite = true;
    double largest = 0;
    for (int e = 0; e < entries_; ++e) {
        float norm = 0.0f;
        for (int j = 0; j < vq_dim; ++j) {
            const float v = centroids[static_cast<size_t>(e) * vq_dim + j];
            columns_[static_cast<size_t>(j) * padded_ + e] = v;
            norm = std::fma(v, v, norm);
            finite = finite && std::isfinite(v);
            largest = std::max(largest, static_cast<double>(std::fabs(v)));
        }
        norms_[static_cast<size_t>(e)] = norm;
    }
    // The screened search's book, where its error bound holds.
    screenable_ = finite && largest <= range_hi && (largest == 0 || largest >= range_lo);
    if (!screenable_) return;
    scale_ = largest > 0 ? static_cast<float>(largest / c_levels) : 1.0f;
    codes_.assign(static_cast<size_t>(padded_ / 8) * 64, static_cast<uint8_t>(c_offset));
    codes16_.assign(static_cast<size_t>(padded_ / 16) * 128, static_cast<uint8_t>(c_offset));
    for (int e = 0; e < entries_; ++e) {
        double norm2 = 0, error2 = 0;
        for (int j = 0; j < vq_dim; ++j) {
            const double v = centroids[static_cast<size_t>(e) * vq_dim + j];
            const double q = std::clamp(std::nearbyint(v / scale_), static_cast<double>(-c_levels),
                                        static_cast<double>(c_levels));
            const auto code = static_cast<uint8_t>(static_cast<int>(q) + c_offset);
            codes_[static_cast<size_t>(e / 8) * 64 + (j / 4) * 32 + (e % 8) * 4 + j % 4] = code;
            codes16_[static_cast<size_t>(e / 16) * 128 + (j / 4) * 64 + (e % 16) * 4 + j % 4] = code;
            norm2 += v * v;
            error2 += (v - q * scale_) * (v - q * scale_);
        }
        // f64 rounding of these sums is far below the 2^-30 margin.
        max_norm_ = std::max(max_norm_, std::sqrt(norm2) * (1 + 0x1p-30));
        max_code_error_ = std::max(max_code_error_, std::sqrt(error2) * (1 + 0x1p-30));
        max_norm2_ = std::max(max_norm2_, static_cast<double>(norms_[static_cast<size_t>(e)]));
    }
}

const char* search_path_name(SearchPath path) {
    switch (path) {
    case SearchPath::best: return "best";
    case SearchPath::scalar: return "scalar";
    case SearchPath::avx2: return "avx2";
    case SearchPath::avx2_screened: return "avx2_screened";
    case SearchPath::avx512: return "avx512";
    case SearchPath::avx512_screened: return "avx512_screened";
    }
    return "?";
}

bool avx2_search_available() {
#if WASTE_X86_SIMD
    static const bool available = [] {
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    }();
    return available;
#else
    return false;
#endif
}

bool avx512_search_available() {
#if WASTE_X86_SIMD
    static const bool available = [] {
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma");
    }();
    return available;
#else
    return false;
#endif
}

bool avx512_screen_available() {
#if WASTE_X86_SIMD
    static const bool available = [] {
        __builtin_cpu_init();
        return avx512_search_available() && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
    }();
    return available;
#else
    return false;
#endif
}

bool search_path_available(SearchPath path) {
    switch (path) {
    case SearchPath::best:
    case SearchPath::scalar: return true;
    case SearchPath::avx2:
    case SearchPath::avx2_screened: return avx2_search_available();
    case SearchPath::avx512: return avx512_search_available();
    case SearchPath::avx512_screened: return avx512_screen_available();
    }
    return false;
}

void nearest_centroids(const SearchBook& book, const float* vectors, size_t count, uint8_t* out, SearchPath path,
                       SearchStats* stats) {
    if (path == SearchPath::best)
        path = avx512_search_available() ? SearchPath::avx512
               : avx2_search_available() ? SearchPath::avx2
                                         : SearchPath::scalar;
    if (stats) stats->vectors += count;
#if WASTE_X86_SIMD
    if (path == SearchPath::avx512) {
        WASTE_CHECK(avx512_search_available());
        detail::nearest_avx512(book, vectors, count, out);
        if (stats) stats->exact_evaluations += count * static_cast<uint64_t>(book.padded());
        return;
    }
    if (path == SearchPath::avx512_screened) {
        WASTE_CHECK(avx512_screen_available());
        detail::nearest_screened_avx512(book, vectors, count, out, stats);
        return;
    }
    if (path == SearchPath::avx2 || path == SearchPath::avx2_screened) {
        WASTE_CHECK(avx2_search_available());
        if (path == SearchPath::avx2) {
            nearest_avx2(book, vectors, count, out);
            if (stats) stats->exact_evaluations += count * static_cast<uint64_t>(book.padded());
        } else {
            nearest_screened_avx2(book, vectors, count, out, stats);
        }
        return;
    }
#endif
    WASTE_CHECK(path == SearchPath::scalar);
    nearest_scalar(book, vectors, count, out);
    if (stats) stats->exact_evaluations += count * static_cast<uint64_t>(book.padded());
}

}  // namespace waste::convert
