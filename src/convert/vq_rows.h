// vq_rows.h — the encoder's per-row passes besides the search: the finite
// check, the row's absmax and normalisation, the residual update and the
// error figure. Each is built for any CPU and, where the CPU has AVX-512,
// for it; both give the same bits (no operation here may be contracted or
// reordered between the two: see each).
//
// Deliberately not here: the search (vq_search.h), the index layout (vq_fit.cpp).
#pragma once

#include <cstdint>

#include "convert/vq_search.h"

namespace waste::convert::row_passes {

// best: the AVX-512 copy where the CPU has it; generic: the other (tests
// compare the two).
enum class RowPath { best, generic };

// The index of the first non-finite value of row[0, cols), or cols.
uint32_t first_non_finite(const float* row, uint32_t cols, RowPath path = RowPath::best);

// max |row[i]| over the non-NaN values (+inf included), as std::max over
// std::fabs would give it; 0 for an empty or all-NaN row.
float absmax(const float* row, uint32_t cols, RowPath path = RowPath::best);

// out[i] = row[i] / scale (IEEE division: the same bits at every width).
void divide(const float* row, uint32_t cols, float scale, float* out, RowPath path = RowPath::best);

// residual[v] -= the centroid labels[v] picks, for `positions` vectors of 8.
void subtract_centroids(const SearchBook& book, const uint8_t* labels, uint32_t positions, float* residual,
                        RowPath path = RowPath::best);

// Σ (w - scale (normalised - residual))² and Σ w² over cols (a multiple of
// 8), in f64: eight partial sums (lane i mod 8), each a separate rounded
// multiply then add, combined as ((0+1)+(2+3))+((4+5)+(6+7)).
struct RowError {
    double error2 = 0, weight2 = 0;
};
RowError row_error(const float* w, const float* normalised, const float* residual, uint32_t cols, double scale,
                   RowPath path = RowPath::best);

}  // namespace waste::convert::row_passes
