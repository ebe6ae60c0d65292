#include "convert/vq_search.h"

#include <cmath>
#include <limits>

#include "kernels/isa.h"
#include "platform/error.h"

#if WASTE_X86_SIMD
#include <immintrin.h>
#endif

namespace waste::convert {
namespace {

constexpr int entry_block = 32;  // the AVX2 loop takes 4 groups of 8 centroids at a time

void nearest_scalar(const SearchBook& book, const float* vectors, size_t count, uint8_t* out) {
    const int padded = book.padded();
    const float* n = book.norms();
    for (size_t i = 0; i < count; ++i) {
        float x[vq_dim];
        for (int j = 0; j < vq_dim; ++j) x[j] = -2.0f * vectors[i * vq_dim + j];
        float best = std::numeric_limits<float>::infinity();
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
#pragma GCC push_options
#pragma GCC target("avx2,fma")
// Lanes are centroids: 4 independent fma chains (32 centroids) per step, each
// folded into one running (best value, best index) pair per lane in ascending
// centroid order, so a lane keeps its first minimum; the final reduction takes
// the smallest value and, among equal ones, the smallest index — the scalar
// loop's answer.
__attribute__((noinline)) void nearest_avx2(const SearchBook& book, const float* vectors, size_t count, uint8_t* out) {
    const int padded = book.padded();
    const float* n = book.norms();
    const float* c[vq_dim];
    for (int j = 0; j < vq_dim; ++j) c[j] = book.column(j);
    const __m256i lane_ids = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (size_t i = 0; i < count; ++i) {
        __m256 x[vq_dim];
        for (int j = 0; j < vq_dim; ++j) x[j] = _mm256_set1_ps(-2.0f * vectors[i * vq_dim + j]);
        __m256 best = _mm256_set1_ps(std::numeric_limits<float>::infinity());
        __m256i best_index = _mm256_setzero_si256();
        for (int e = 0; e < padded; e += entry_block) {
            __m256 d0 = _mm256_loadu_ps(n + e), d1 = _mm256_loadu_ps(n + e + 8);
            __m256 d2 = _mm256_loadu_ps(n + e + 16), d3 = _mm256_loadu_ps(n + e + 24);
            for (int j = 0; j < vq_dim; ++j) {
                d0 = _mm256_fmadd_ps(x[j], _mm256_loadu_ps(c[j] + e), d0);
                d1 = _mm256_fmadd_ps(x[j], _mm256_loadu_ps(c[j] + e + 8), d1);
                d2 = _mm256_fmadd_ps(x[j], _mm256_loadu_ps(c[j] + e + 16), d2);
                d3 = _mm256_fmadd_ps(x[j], _mm256_loadu_ps(c[j] + e + 24), d3);
            }
            const __m256 ds[4] = {d0, d1, d2, d3};
            for (int g = 0; g < 4; ++g) {
                const __m256 less = _mm256_cmp_ps(ds[g], best, _CMP_LT_OQ);
                best = _mm256_blendv_ps(best, ds[g], less);
                const __m256i ids = _mm256_add_epi32(lane_ids, _mm256_set1_epi32(e + 8 * g));
                best_index = _mm256_castps_si256(
                    _mm256_blendv_ps(_mm256_castsi256_ps(best_index), _mm256_castsi256_ps(ids), less));
            }
        }
        alignas(32) float values[8];
        alignas(32) int32_t indices[8];
        _mm256_store_ps(values, best);
        _mm256_store_si256(reinterpret_cast<__m256i*>(indices), best_index);
        int pick = 0;
        for (int l = 1; l < 8; ++l)
            if (values[l] < values[pick] || (values[l] == values[pick] && indices[l] < indices[pick])) pick = l;
        out[i] = static_cast<uint8_t>(indices[pick]);
    }
}
#pragma GCC pop_options
#endif

}  // namespace

SearchBook::SearchBook(std::span<const float> centroids) {
    WASTE_CHECK(centroids.size() % vq_dim == 0);
    entries_ = static_cast<int>(centroids.size() / vq_dim);
    WASTE_CHECK(entries_ >= 1 && entries_ <= 256);
    padded_ = (entries_ + entry_block - 1) / entry_block * entry_block;
    centroids_.assign(centroids.begin(), centroids.end());
    columns_.assign(static_cast<size_t>(vq_dim) * padded_, 0.0f);
    norms_.assign(static_cast<size_t>(padded_), std::numeric_limits<float>::infinity());
    for (int e = 0; e < entries_; ++e) {
        float norm = 0.0f;
        for (int j = 0; j < vq_dim; ++j) {
            const float v = centroids[static_cast<size_t>(e) * vq_dim + j];
            columns_[static_cast<size_t>(j) * padded_ + e] = v;
            norm = std::fma(v, v, norm);
        }
        norms_[static_cast<size_t>(e)] = norm;
    }
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

void nearest_centroids(const SearchBook& book, const float* vectors, size_t count, uint8_t* out, SearchPath path) {
    if (path == SearchPath::best) path = avx2_search_available() ? SearchPath::avx2 : SearchPath::scalar;
#if WASTE_X86_SIMD
    if (path == SearchPath::avx2) {
        WASTE_CHECK(avx2_search_available());
        nearest_avx2(book, vectors, count, out);
        return;
    }
#endif
    WASTE_CHECK(path == SearchPath::scalar);
    nearest_scalar(book, vectors, count, out);
}

}  // namespace waste::convert
