// vq_search_avx512.cpp — the AVX-512 search paths (vq_search.h): the
// exhaustive fma chain on 16 centroids per register, and the VNNI-screened
// search. Compiled with per-function target attributes so the library still
// runs on a CPU without AVX-512; vq_search.cpp dispatches here only when the
// CPU has it.
#include "convert/vq_search_paths.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/isa.h"

#if WASTE_X86_SIMD
#include <immintrin.h>
#endif

namespace waste::convert::detail {

#if WASTE_X86_SIMD
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,fma")

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
// feeds every vector's chain (loads, not FMAs, bound a one-vector loop:
// 2 vectors x 4 chains measured 35 ns per vector, 4 x 4 28 ns, 6 x 2 and
// 8 x 2 30-38 ns). x' is broadcast from a small array as needed (4 vectors'
// 32 values do not all fit in registers beside 16 chains and 4 minima).
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

#pragma GCC pop_options
#endif

}  // namespace waste::convert::detail
