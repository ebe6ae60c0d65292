// vq_search_paths.h — the search kernels vq_search.cpp dispatches to that
// live in their own translation units (internal to src/convert).
#pragma once

#include <cstddef>
#include <cstdint>

#include "convert/vq_search.h"

namespace waste::convert::detail {

// The range the screened searches' error bound is proven for: every quantity
// it involves is a normal f32/f64 well away from overflow (|x|max and the
// book's largest |c| within [2^-40, 2^40]; a zero book too).
constexpr double screen_range_lo = 0x1p-40, screen_range_hi = 0x1p40;

// The screened searches' bound delta on |score - exact distance - K| (K the
// same for every centroid), vq_search.cpp derives it: x quantised to
// ±x_levels with step sx, |x - sx xq| <= ex, |x| <= xn, unit = f32(2 sx sc).
inline double screen_delta(const SearchBook& book, double ex, double xn, float unit, int x_levels) {
    const double u = 0x1p-24;  // unit roundoff of f32
    const double cmax = book.max_norm(), qmax = book.max_code_error(), nmax = book.max_norm2();
    const double max_dot_u = 8.0 * 255 * x_levels;  // |sum code * xq|
    const double max_dot_q = 8.0 * 127 * x_levels;  // |sum (code - 128) * xq|
    return (2 * (ex * cmax + (xn + ex) * qmax) + 9 * u * (nmax + 2 * xn * cmax) + u * (nmax + unit * max_dot_u) +
            u * 1.01 * unit * max_dot_q) *
               (1 + 0x1p-20) +
           0x1p-140;
}

// AVX-512F: the exhaustive search, 16 centroids per register (vq_search_avx512.cpp).
// Only call where avx512_search_available().
void nearest_avx512(const SearchBook& book, const float* vectors, size_t count, uint8_t* out);

// AVX-512 VNNI: the screened search, int8 scores by vpdpbusd on 16 centroids
// per register (vq_search_avx512.cpp). Only call where avx512_screen_available().
void nearest_screened_avx512(const SearchBook& book, const float* vectors, size_t count, uint8_t* out,
                             SearchStats* stats);

}  // namespace waste::convert::detail
