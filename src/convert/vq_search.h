// vq_search.h — nearest-centroid search for the VQ converter (vec_dim 8).
//
// Owns the one distance formula every caller (k-means assignment, expert
// encoding, tests) uses, so that every path picks the same centroid bit for
// bit: with x' = -2x and n[e] = |c_e|^2,
//     d(e) = fma(x'7, c7[e], ... fma(x'0, c0[e], n[e]))     (one f32 fma chain)
// and the nearest is the first e with the smallest d (strict <, ascending e).
// |x|^2 is left out: it is the same for every centroid.
//
// Five paths, one answer (convert_test checks it on random and adversarial
// inputs; --jobs and the CPU never change a byte):
//  - scalar: the formula itself, every centroid (the reference);
//  - avx2: the same fma chain on 8 centroids per lane group, every centroid,
//    ties reduced to the lowest index (exhaustive);
//  - avx512: the same on 16 centroids per lane group, 4 vectors per pass
//    sharing each centroid load (exhaustive; vq_search_avx512.cpp). fma is
//    correctly rounded, so every lane width gives the scalar chain's bits;
//  - avx2_screened: every centroid scored cheaply in int8 (x to 7 bits per
//    vector, centroids to 8 bits per book, vpmaddubsw), then the exact chain
//    only for the centroids whose score is within twice a proven error bound
//    of the best score. The bound covers the int8 rounding of x and c
//    (Cauchy-Schwarz) and the f32 rounding of the exact chain, so a centroid
//    left out has a larger exact d than the best one: the result is the
//    exhaustive search's, ties included. A vector or book outside the range
//    the bound is proven for (|x|max or |c|max beyond 2^±40, non-finite
//    values) takes the exhaustive path;
//  - avx512_screened: the same screen with x to 8 bits and the int8 dot
//    products by vpdpbusd (AVX-512 VNNI), 16 centroids per register; a lone
//    candidate is the answer without its exact distance.
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
// never win (norm +inf); and the int8 copy the screened search scores with.
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

    // The screened search's int8 book: centroid e's value in dim j is about
    // (code - 128) * screen_scale; codes of block b (centroids 8b..8b+7) are
    // [b][half][lane*4 + k] for dim 4*half + k. Absent (screenable() false)
    // when the bound is not proven for these centroids.
    bool screenable() const { return screenable_; }
    const uint8_t* screen_codes() const { return codes_.data(); }
    // The same codes for 16-centroid blocks (the AVX-512 screen): block b
    // (centroids 16b..16b+15) is [b][half][lane*4 + k] for dim 4*half + k.
    const uint8_t* screen_codes16() const { return codes16_.data(); }
    float screen_scale() const { return scale_; }
    double max_norm() const { return max_norm_; }            // max_e |c_e|
    double max_code_error() const { return max_code_error_; }  // max_e |c_e - decoded code_e|
    double max_norm2() const { return max_norm2_; }          // max_e n[e]

private:
    int entries_ = 0, padded_ = 0;
    std::vector<float> columns_;    // [8][padded]
    std::vector<float> norms_;      // [padded]
    std::vector<float> centroids_;  // [entries][8]
    bool screenable_ = false;
    std::vector<uint8_t> codes_;    // [padded / 8][2][32]
    std::vector<uint8_t> codes16_;  // [padded / 16][2][64]
    float scale_ = 0;
    double max_norm_ = 0, max_code_error_ = 0, max_norm2_ = 0;
};

enum class SearchPath { best, scalar, avx2, avx2_screened, avx512, avx512_screened };
const char* search_path_name(SearchPath path);

// What a search did (for benchmarks): exact-chain centroid evaluations and
// vectors that took the exhaustive path.
struct SearchStats {
    uint64_t vectors = 0, exact_evaluations = 0, exhaustive_vectors = 0;
};

// Nearest centroid of each of `count` vectors ([count][8] f32) -> out[count].
// best = avx512 where the CPU has AVX-512F, else avx2 where it has AVX2+FMA,
// else scalar. The screened paths evaluate ~0.8-1.6 exact distances per
// vector instead of 256, but their per-vector work (quantising x, the bound,
// the threshold, data-dependent branches) is serial and costs more than the
// f32 chains it saves: as measured, neither screened path pays against its
// exhaustive one (docs/bench-log/conversion.md, "Zen 5, AVX-512" and
// "Earlier: the Zen 3 VM, AVX2 only").
void nearest_centroids(const SearchBook& book, const float* vectors, size_t count, uint8_t* out,
                       SearchPath path = SearchPath::best, SearchStats* stats = nullptr);

// Whether the AVX2 variants exist in this build and run on this CPU.
bool avx2_search_available();
// Whether the AVX-512 exhaustive path exists in this build and runs on this CPU (AVX-512F).
bool avx512_search_available();
// Whether the AVX-512 VNNI screened path exists in this build and runs on this CPU
// (AVX-512F/BW/VL/VNNI).
bool avx512_screen_available();
// Whether `path` runs here (best and scalar: always).
bool search_path_available(SearchPath path);

}  // namespace waste::convert
