// int8_reduce_avx512.h — the VNNI int8 bodies' transpose-reduce: 16 vectors
// of int32 partial dot products (one per row and token of a tile) to one
// vector holding each one's total. Integer adds, so the order never matters.
// Include only where WASTE_X86_SIMD, from code compiled for AVX-512.
#pragma once

#include <immintrin.h>

namespace waste::kernels {

// Lane i of the result: the sum of the 16 lanes of a[i].
__attribute__((target("avx512f"))) inline __m512i int8_reduce16(const __m512i a[16]) {
    __m512i b[8], c[4];
    for (int i = 0; i < 8; ++i)
        b[i] = _mm512_add_epi32(_mm512_unpacklo_epi32(a[2 * i], a[2 * i + 1]), _mm512_unpackhi_epi32(a[2 * i], a[2 * i + 1]));
    for (int i = 0; i < 4; ++i)
        c[i] = _mm512_add_epi32(_mm512_unpacklo_epi64(b[2 * i], b[2 * i + 1]), _mm512_unpackhi_epi64(b[2 * i], b[2 * i + 1]));
    const __m512i d0 = _mm512_add_epi32(_mm512_shuffle_i32x4(c[0], c[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                        _mm512_shuffle_i32x4(c[0], c[1], _MM_SHUFFLE(3, 1, 3, 1)));
    const __m512i d1 = _mm512_add_epi32(_mm512_shuffle_i32x4(c[2], c[3], _MM_SHUFFLE(2, 0, 2, 0)),
                                        _mm512_shuffle_i32x4(c[2], c[3], _MM_SHUFFLE(3, 1, 3, 1)));
    return _mm512_add_epi32(_mm512_shuffle_i32x4(d0, d1, _MM_SHUFFLE(2, 0, 2, 0)),
                            _mm512_shuffle_i32x4(d0, d1, _MM_SHUFFLE(3, 1, 3, 1)));
}

}  // namespace waste::kernels
