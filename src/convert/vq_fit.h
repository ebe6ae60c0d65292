// vq_fit.h — residual VQ codebooks by k-means, and expert matrices encoded
// with them (container-v0 §4-§5).
//
// A matrix row r is normalised by its absmax (the f16 row scale the record
// stores), cut into vectors of 8, and each vector is coded in S residual
// stages: stage s picks the nearest centroid of book s to what the stages
// before it left over. Books are fitted the same way, stage after stage, by
// k-means (k-means++ seeding, Lloyd iterations) on a sample of normalised
// vectors; each stage's centroids are rounded to f16 — what the reader sees —
// before the next stage's residuals are taken, so fitting and encoding agree
// with the decoder exactly.
//
// Determinism: every random choice comes from a seeded stream; parallel work
// is split into fixed chunks whose partial sums are added in chunk order, so
// the thread count never changes a bit of the output.
//
// Deliberately not here: where the vectors come from (converter.cpp), the
// nearest-centroid kernel (vq_search.h), the record header (format/).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "convert/vq_search.h"
#include "format/manifest.h"

namespace waste::platform {
class ThreadPool;
}

namespace waste::convert {

struct KmeansOptions {
    int iterations = 12;   // Lloyd iterations at most (stops earlier when no vector moves)
    uint64_t seed = 1;
};

// The S books of one (layer, matrix kind).
struct StageBooks {
    std::vector<std::vector<uint16_t>> f16;  // [S] -> [entries][8] f16 bits, as written to codebooks.bin
    std::vector<SearchBook> search;          // [S], the same centroids as f32
};

// Fits `stages` residual books of `entries` centroids on `vectors` ([n][8],
// already normalised). `vectors` is consumed (it becomes the last residual).
StageBooks fit_residual_books(std::vector<float> vectors, int stages, int entries, const KmeansOptions& options,
                              platform::ThreadPool& pool);

// One k-means run (exposed for the tests): centroids [entries][8] f32.
std::vector<float> kmeans(std::span<const float> vectors, int entries, const KmeansOptions& options,
                          platform::ThreadPool& pool);

// Squared error and squared norm of a matrix against its decoding.
struct MatrixError {
    double error2 = 0;   // Σ (w - ŵ)²
    double weight2 = 0;  // Σ w²
};

// Row r of `rows` x `cols` weights, normalised: scale = f16(absmax), vectors
// w / scale (0 for a zero scale). Returns the f16 scale bits.
uint16_t normalise_row(const float* row, uint32_t cols, float* out);

// Encodes a [rows][cols] f32 matrix: f16 row scales into scales[rows], index
// bytes in the container layout into indices (quant.index_bytes_per_position()
// bytes per (row, position); padding rows zero). Throws WASTE_ERR_INVALID_ARGUMENT
// naming `what` and the row for a non-finite weight or a row scale f16 cannot hold.
// `path` only chooses the search kernel (benchmarks); every path gives the same bytes.
MatrixError encode_matrix(const float* weights, uint32_t rows, uint32_t cols, const StageBooks& books,
                          const format::ExpertQuant& quant, uint8_t* indices, uint16_t* scales,
                          platform::ThreadPool& pool, const char* what, SearchPath path = SearchPath::best);

// Decodes the same layout back to [rows][cols] f32 (for verify and tests).
void decode_matrix(const uint8_t* indices, const uint16_t* scales, uint32_t rows, uint32_t cols,
                   const std::vector<std::vector<float>>& books, const format::ExpertQuant& quant, float* out);

}  // namespace waste::convert
