// vq_search.h — nearest-centroid search for the VQ converter (vec_dim 8).
//
// Owns the one distance formula every caller (k-means assignment, expert
// encoding, tests) uses, so that every path picks the same centroid bit for
// bit: with x' = -2x and n[e] = |c_e|^2,
//     d(e) = fma(x'7, c7[e], ... fma(x'0, c0[e], n[e]))     (one f32 fma chain)
// and the nearest is the first e with the smallest d (strict <, ascending e).
// |x|^2 is left out: it is the same for every centroid. The AVX2 variant runs
// the same fma chain on 8 centroids per lane group and reduces ties to the
// lowest index, so it returns exactly what the scalar reference returns on
// every input (vq_test checks it); --jobs and the CPU never change a byte.
//
// Deliberately not here: fitting codebooks (vq_fit.h), record layout.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace waste::convert {

constexpr int vq_dim = 8;  // vec_dim of every v0 VQ format

// A codebook prepared for search: centroids transposed to [8][entries_padded]
// with |c|^2, padded to a multiple of 32 entries with centroids that can
// never win (norm +inf).
class SearchBook {
public:
    SearchBook() = default;
    // centroids: [entries][8] f32 (already rounded to what the reader sees).
    explicit SearchBook(std::span<const float> centroids);
    int entries() const { return entries_; }
    int padded() const { return padded_; }
    const float* column(int j) const { return columns_.data() + static_cast<size_t>(j) * padded_; }
    const float* norms() const { return norms_.data(); }
    const float* centroid(int e) const { return centroids_.data() + static_cast<size_t>(e) * vq_dim; }

private:
    int entries_ = 0, padded_ = 0;
    std::vector<float> columns_;    // [8][padded]
    std::vector<float> norms_;      // [padded]
    std::vector<float> centroids_;  // [entries][8]
};

enum class SearchPath { best, scalar, avx2 };

// Nearest centroid of each of `count` vectors ([count][8] f32) -> out[count].
void nearest_centroids(const SearchBook& book, const float* vectors, size_t count, uint8_t* out,
                       SearchPath path = SearchPath::best);

// Whether the AVX2 variant exists in this build and runs on this CPU.
bool avx2_search_available();

}  // namespace waste::convert
