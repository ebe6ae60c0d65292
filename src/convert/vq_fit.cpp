#include "convert/vq_fit.h"

#include "convert/vq_rows.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "format/f16.h"
#include "kernels/isa.h"
#include "platform/error.h"
#include "platform/thread_pool.h"
#include "synth/synth_random.h"

namespace waste::convert {
namespace {

constexpr size_t chunk_vectors = 4096;  // fixed work unit: partial sums per chunk, added in chunk order
constexpr uint32_t rows_per_block = 64; // index_block of v0: one row block is one contiguous index region

size_t chunk_count(size_t n) { return (n + chunk_vectors - 1) / chunk_vectors; }

void assign(const SearchBook& book, std::span<const float> vectors, std::vector<uint8_t>& labels,
            platform::ThreadPool& pool) {
    const size_t n = vectors.size() / vq_dim;
    labels.resize(n);
    pool.parallel_for(chunk_count(n), [&](size_t begin, size_t end) {
        for (size_t c = begin; c < end; ++c) {
            const size_t first = c * chunk_vectors, count = std::min(chunk_vectors, n - first);
            nearest_centroids(book, vectors.data() + first * vq_dim, count, labels.data() + first);
        }
    });
}

// nearest[i] = min(nearest[i], |vectors[i] - c|^2) over [n][8] vectors, each
// distance one f32 fma chain. Compiled twice: for any CPU, where std::fma may
// be a library call, and for AVX2+FMA, where it is one instruction; fma is
// correctly rounded either way, so both give the same bits (k-means++
// seeding spent most of its time in the library call).
__attribute__((always_inline)) inline void update_nearest(std::span<const float> vectors, const float* c,
                                                          float* nearest) {
    const size_t n = vectors.size() / vq_dim;
    for (size_t i = 0; i < n; ++i) {
        float d = 0;
        for (int j = 0; j < vq_dim; ++j) {
            const float diff = vectors[i * vq_dim + j] - c[j];
            d = std::fma(diff, diff, d);
        }
        nearest[i] = std::min(nearest[i], d);
    }
}

void update_nearest_any(std::span<const float> vectors, const float* c, float* nearest) {
    update_nearest(vectors, c, nearest);
}

#if WASTE_X86_SIMD
__attribute__((target("avx2,fma"))) void update_nearest_fma(std::span<const float> vectors, const float* c,
                                                            float* nearest) {
    update_nearest(vectors, c, nearest);
}
#endif

// k-means++ seeding: each next centroid drawn with probability proportional to
// the squared distance to the nearest one chosen so far (sums in double,
// sequential: deterministic).
std::vector<float> seed_centroids(std::span<const float> vectors, int entries, synth::Random& random) {
    const size_t n = vectors.size() / vq_dim;
    std::vector<float> centroids(static_cast<size_t>(entries) * vq_dim, 0.0f);
    std::vector<float> nearest(n, std::numeric_limits<float>::infinity());
    size_t pick = static_cast<size_t>(random.next() % n);
    for (int e = 0; e < entries; ++e) {
        std::memcpy(&centroids[static_cast<size_t>(e) * vq_dim], &vectors[pick * vq_dim], sizeof(float) * vq_dim);
        const float* c = &centroids[static_cast<size_t>(e) * vq_dim];
#if WASTE_X86_SIMD
        if (avx2_search_available())
            update_nearest_fma(vectors, c, nearest.data());
        else
#endif
            update_nearest_any(vectors, c, nearest.data());
        double total = 0;
        for (size_t i = 0; i < n; ++i) total += nearest[i];
        if (e + 1 == entries) break;
        if (total <= 0) {  // fewer distinct vectors than entries: the rest repeat (never chosen: ties go to the first)
            pick = static_cast<size_t>(random.next() % n);
            continue;
        }
        double target = random.uniform() * total, running = 0;
        pick = n - 1;
        for (size_t i = 0; i < n; ++i) {
            running += nearest[i];
            if (running > target && nearest[i] > 0) {
                pick = i;
                break;
            }
        }
    }
    return centroids;
}

std::vector<float> rounded_to_f16(std::span<const float> values, std::vector<uint16_t>* bits) {
    std::vector<float> out(values.size());
    if (bits) bits->resize(values.size());
    for (size_t i = 0; i < values.size(); ++i) {
        const uint16_t h = format::f32_to_f16(values[i]);
        if (bits) (*bits)[i] = h;
        out[i] = format::f16_to_f32(h);
    }
    return out;
}

size_t index_offset(uint32_t row, uint32_t position, uint32_t positions, int per) {
    return ((static_cast<size_t>(row / rows_per_block) * positions + position) * rows_per_block + row % rows_per_block) *
           static_cast<size_t>(per);
}

void store_indices(uint8_t* at, const uint8_t* stage_index, const format::ExpertQuant& quant) {
    if (quant.index_bits == 6) {
        // VQ4P: four 6-bit indices in 3 bytes, little-endian (container-v0 §5).
        const unsigned s0 = stage_index[0], s1 = stage_index[1], s2 = stage_index[2], s3 = stage_index[3];
        at[0] = static_cast<uint8_t>(s0 | (s1 & 3u) << 6);
        at[1] = static_cast<uint8_t>((s1 >> 2) | (s2 & 15u) << 4);
        at[2] = static_cast<uint8_t>((s2 >> 4) | s3 << 2);
    } else {
        for (int s = 0; s < quant.stages; ++s) at[s] = stage_index[s];
    }
}

void load_indices(const uint8_t* at, uint8_t* stage_index, const format::ExpertQuant& quant) {
    if (quant.index_bits == 6) {
        stage_index[0] = at[0] & 63;
        stage_index[1] = static_cast<uint8_t>((at[0] >> 6) | (at[1] & 15) << 2);
        stage_index[2] = static_cast<uint8_t>((at[1] >> 4) | (at[2] & 3) << 4);
        stage_index[3] = static_cast<uint8_t>(at[2] >> 2);
    } else {
        for (int s = 0; s < quant.stages; ++s) stage_index[s] = at[s];
    }
}

}  // namespace

std::vector<float> kmeans(std::span<const float> vectors, int entries, const KmeansOptions& options,
                          platform::ThreadPool& pool) {
    WASTE_CHECK(vectors.size() % vq_dim == 0 && !vectors.empty() && entries >= 1 && entries <= 256);
    const size_t n = vectors.size() / vq_dim;
    synth::Random random(options.seed);
    std::vector<float> centroids = seed_centroids(vectors, entries, random);
    std::vector<uint8_t> labels, previous;
    const size_t chunks = chunk_count(n);
    // [chunk][entries][8 sums + count] doubles
    std::vector<double> partial(chunks * static_cast<size_t>(entries) * (vq_dim + 1));
    for (int iteration = 0; iteration < options.iterations; ++iteration) {
        assign(SearchBook(centroids), vectors, labels, pool);
        if (labels == previous) break;
        pool.parallel_for(chunks, [&](size_t begin, size_t end) {
            for (size_t c = begin; c < end; ++c) {
                double* sums = &partial[c * static_cast<size_t>(entries) * (vq_dim + 1)];
                std::fill(sums, sums + static_cast<size_t>(entries) * (vq_dim + 1), 0.0);
                const size_t first = c * chunk_vectors, last = std::min(n, first + chunk_vectors);
                for (size_t i = first; i < last; ++i) {
                    double* s = sums + static_cast<size_t>(labels[i]) * (vq_dim + 1);
                    for (int j = 0; j < vq_dim; ++j) s[j] += vectors[i * vq_dim + j];
                    s[vq_dim] += 1;
                }
            }
        });
        for (int e = 0; e < entries; ++e) {
            double total[vq_dim + 1] = {};
            for (size_t c = 0; c < chunks; ++c) {
                const double* s = &partial[(c * static_cast<size_t>(entries) + static_cast<size_t>(e)) * (vq_dim + 1)];
                for (int j = 0; j <= vq_dim; ++j) total[j] += s[j];
            }
            float* centroid = &centroids[static_cast<size_t>(e) * vq_dim];
            if (total[vq_dim] == 0) {
                // An empty cluster restarts at a random training vector.
                const size_t pick = static_cast<size_t>(random.next() % n);
                std::memcpy(centroid, &vectors[pick * vq_dim], sizeof(float) * vq_dim);
                continue;
            }
            for (int j = 0; j < vq_dim; ++j) centroid[j] = static_cast<float>(total[j] / total[vq_dim]);
        }
        previous.swap(labels);
    }
    return centroids;
}

StageBooks fit_residual_books(std::vector<float> vectors, int stages, int entries, const KmeansOptions& options,
                              platform::ThreadPool& pool) {
    WASTE_CHECK(stages >= 1 && stages <= 8);
    StageBooks books;
    std::vector<uint8_t> labels;
    for (int s = 0; s < stages; ++s) {
        KmeansOptions stage_options = options;
        stage_options.seed = synth::stream_seed(options.seed, "stage", static_cast<uint64_t>(s));
        const std::vector<float> fitted = kmeans(vectors, entries, stage_options, pool);
        std::vector<uint16_t> bits;
        const std::vector<float> rounded = rounded_to_f16(fitted, &bits);
        books.f16.push_back(std::move(bits));
        books.search.emplace_back(rounded);
        if (s + 1 == stages) break;
        // Residuals against the rounded centroids, as the encoder will see them.
        assign(books.search.back(), vectors, labels, pool);
        const SearchBook& book = books.search.back();
        for (size_t i = 0; i < labels.size(); ++i)
            for (int j = 0; j < vq_dim; ++j) vectors[i * vq_dim + j] -= book.centroid(labels[i])[j];
    }
    return books;
}

uint16_t normalise_row(const float* row, uint32_t cols, float* out) {
    const uint16_t bits = format::f32_to_f16(row_passes::absmax(row, cols));
    const float scale = format::f16_to_f32(bits);
    const bool usable = scale > 0 && std::isfinite(scale);  // a zero row, or one the caller will refuse
    if (usable)
        row_passes::divide(row, cols, scale, out);
    else
        std::fill(out, out + cols, 0.0f);
    return bits;
}

MatrixError encode_matrix(const float* weights, uint32_t rows, uint32_t cols, const StageBooks& books,
                          const format::ExpertQuant& quant, uint8_t* indices, uint16_t* scales,
                          platform::ThreadPool& pool, const char* what, SearchPath path) {
    WASTE_CHECK(cols % vq_dim == 0 && static_cast<int>(books.search.size()) == quant.stages);
    const uint32_t positions = cols / vq_dim;
    const uint32_t blocks = (rows + rows_per_block - 1) / rows_per_block;
    const int per = quant.index_bytes_per_position();
    std::memset(indices, 0, static_cast<size_t>(blocks) * rows_per_block * positions * per);
    std::vector<MatrixError> block_error(blocks);
    pool.parallel_for(blocks, [&](size_t begin, size_t end) {
        std::vector<float> normalised(cols), residual(cols);
        std::vector<uint8_t> labels(static_cast<size_t>(quant.stages) * positions);  // [stage][position]
        for (size_t b = begin; b < end; ++b) {
            MatrixError err;
            const uint32_t last = std::min(rows, static_cast<uint32_t>((b + 1) * rows_per_block));
            for (uint32_t r = static_cast<uint32_t>(b * rows_per_block); r < last; ++r) {
                const float* w = weights + static_cast<size_t>(r) * cols;
                if (const uint32_t i = row_passes::first_non_finite(w, cols); i < cols)
                    fail(WASTE_ERR_INVALID_ARGUMENT, "{}: weight [{}][{}] is {}", what, r, i, w[i]);
                const uint16_t scale_bits = normalise_row(w, cols, normalised.data());
                if ((scale_bits & 0x7C00) == 0x7C00)
                    fail(WASTE_ERR_INVALID_ARGUMENT, "{}: row {} has absmax beyond f16's range (65504)", what, r);
                scales[r] = scale_bits;
                residual = normalised;
                for (int s = 0; s < quant.stages; ++s) {
                    uint8_t* stage_labels = labels.data() + static_cast<size_t>(s) * positions;
                    const SearchBook& book = books.search[static_cast<size_t>(s)];
                    nearest_centroids(book, residual.data(), positions, stage_labels, path);
                    row_passes::subtract_centroids(book, stage_labels, positions, residual.data());
                }
                for (uint32_t v = 0; v < positions; ++v) {
                    uint8_t stage_index[8];
                    for (int s = 0; s < quant.stages; ++s) stage_index[s] = labels[static_cast<size_t>(s) * positions + v];
                    store_indices(indices + index_offset(r, v, positions, per), stage_index, quant);
                }
                // The decoded row is scale * (sum of the chosen centroids) = scale *
                // (normalised - residual) up to f32 rounding (~1e-7 relative): the
                // error figure from the residual, in one pass, instead of re-adding
                // every stage's centroid per weight (the same bits on every CPU).
                const row_passes::RowError e = row_passes::row_error(w, normalised.data(), residual.data(), cols,
                                                         format::f16_to_f32(scale_bits));
                err.error2 += e.error2;
                err.weight2 += e.weight2;
            }
            block_error[b] = err;
        }
    });
    MatrixError total;
    for (const MatrixError& e : block_error) {
        total.error2 += e.error2;
        total.weight2 += e.weight2;
    }
    return total;
}

void decode_matrix(const uint8_t* indices, const uint16_t* scales, uint32_t rows, uint32_t cols,
                   const std::vector<std::vector<float>>& books, const format::ExpertQuant& quant, float* out) {
    const uint32_t positions = cols / vq_dim;
    const int per = quant.index_bytes_per_position();
    for (uint32_t r = 0; r < rows; ++r) {
        const float scale = format::f16_to_f32(scales[r]);
        for (uint32_t v = 0; v < positions; ++v) {
            uint8_t stage_index[8];
            load_indices(indices + index_offset(r, v, positions, per), stage_index, quant);
            for (int j = 0; j < vq_dim; ++j) {
                float sum = 0;
                for (int s = 0; s < quant.stages; ++s)
                    sum += books[static_cast<size_t>(s)][static_cast<size_t>(stage_index[s]) * vq_dim + j];
                out[static_cast<size_t>(r) * cols + v * vq_dim + j] = scale * sum;
            }
        }
    }
}

}  // namespace waste::convert
