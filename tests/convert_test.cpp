// convert_test.cpp — the checkpoint converter (src/convert): nearest-centroid
// search against a brute-force search, k-means and residual encoding,
// determinism across --jobs, resume after interruptions, hostile checkpoints.
//
// Checkpoints are written here by a minimal safetensors writer (the format's
// own definition: u64 header length, JSON header, raw little-endian data), so
// the whole path — checkpoint reader, plan, encoder, writer — is exercised.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <sstream>
#include <string>

#include <time.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "convert/checkpoint.h"
#include "convert/converter.h"
#include "convert/verify_source.h"
#include "convert/vq_fit.h"
#include "convert/vq_rows.h"
#include "convert/vq_search.h"
#include "format/container.h"
#include "format/container_writer.h"
#include "format/f16.h"
#include "platform/error.h"
#include "platform/thread_pool.h"
#include "small_tokenizer_json.h"
#include "test_support.h"
#include "text/tokenizer_loader.h"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using ordered_json = nlohmann::ordered_json;
using namespace waste::convert;

std::vector<float> random_values(size_t n, uint32_t seed, float scale) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, scale);  // values only feed the test, any library's stream will do
    std::vector<float> v(n);
    for (float& x : v) x = normal(rng);
    return v;
}

// ---------------------------------------------------------------- search

}  // namespace

namespace waste::convert {
// gtest names a failing parameter by this.
void PrintTo(SearchPath path, std::ostream* os) { *os << search_path_name(path); }
}  // namespace waste::convert

namespace {

// Every search path besides the scalar reference (each test skips, or
// passes over, the ones this CPU lacks).
std::vector<SearchPath> fast_search_paths() {
    return {SearchPath::avx2, SearchPath::avx2_screened, SearchPath::avx512, SearchPath::avx512_screened};
}

TEST(VqSearch, AgreesWithBruteForceAndAcrossPaths) {
    for (int entries : {256, 64, 37, 1}) {
        const std::vector<float> centroids = random_values(static_cast<size_t>(entries) * 8, 1u + entries, 1.0f);
        const SearchBook book(centroids);
        const size_t n = 3000;
        std::vector<float> x = random_values(n * 8, 7u + entries, 1.0f);
        for (int j = 0; j < 8; ++j) x[j] = centroids[static_cast<size_t>(j)];  // an exact hit
        std::vector<uint8_t> scalar(n), fast(n);
        nearest_centroids(book, x.data(), n, scalar.data(), SearchPath::scalar);
        for (SearchPath path : fast_search_paths())
            if (search_path_available(path)) {
                nearest_centroids(book, x.data(), n, fast.data(), path);
                EXPECT_EQ(scalar, fast) << entries << " entries: the " << search_path_name(path)
                                        << " and scalar paths must pick the same centroid";
            }
        for (size_t i = 0; i < n; ++i) {
            double best = INFINITY;
            for (int e = 0; e < entries; ++e) {
                double d = 0;
                for (int j = 0; j < 8; ++j) {
                    const double diff = static_cast<double>(x[i * 8 + j]) - centroids[static_cast<size_t>(e) * 8 + j];
                    d += diff * diff;
                }
                best = std::min(best, d);
            }
            ASSERT_LT(scalar[i], entries);
            double got = 0;
            for (int j = 0; j < 8; ++j) {
                const double diff = static_cast<double>(x[i * 8 + j]) - centroids[static_cast<size_t>(scalar[i]) * 8 + j];
                got += diff * diff;
            }
            // The f32 |c|^2 - 2x.c form may break near-ties differently from
            // the exact distance: allow f32 rounding of terms of size ~|x|^2+|c|^2 (~16 here).
            EXPECT_LE(got, best + 1e-5) << "vector " << i << ", " << entries << " entries";
        }
        EXPECT_EQ(scalar[0], 0);
    }
}

// Every fast path — exhaustive on wider registers, or screened (int8 scores,
// then the exact chain for the candidates a proven bound leaves) — must return
// exactly the scalar exhaustive loop's index: ties, padding, degenerate books
// and out-of-range magnitudes included. No tolerance: the answer is an index
// and the scalar loop defines it. Vector counts not a multiple of the paths'
// vector groups are part of every call.
class VqSearchPath : public ::testing::TestWithParam<SearchPath> {
protected:
    void SetUp() override {
        if (!search_path_available(GetParam()))
            GTEST_SKIP() << "the " << search_path_name(GetParam()) << " search path does not run on this CPU (or build)";
    }

    void expect_same_as_exhaustive(const std::vector<float>& centroids, const std::vector<float>& x,
                                   const std::string& what, SearchStats* stats = nullptr) {
        const SearchBook book(centroids);
        const size_t n = x.size() / 8;
        std::vector<uint8_t> scalar(n), fast(n);
        nearest_centroids(book, x.data(), n, scalar.data(), SearchPath::scalar);
        nearest_centroids(book, x.data(), n, fast.data(), GetParam(), stats);
        for (size_t i = 0; i < n; ++i)
            ASSERT_EQ(fast[i], scalar[i]) << what << ": " << search_path_name(GetParam()) << ", vector " << i << " of "
                                          << n << " (" << x[i * 8] << ", " << x[i * 8 + 1] << ", ...)";
    }
};

INSTANTIATE_TEST_SUITE_P(Paths, VqSearchPath, ::testing::ValuesIn(fast_search_paths()),
                         [](const ::testing::TestParamInfo<SearchPath>& info) { return search_path_name(info.param); });

std::vector<float> scaled(std::vector<float> v, float factor) {
    for (float& x : v) x *= factor;
    return v;
}

TEST_P(VqSearchPath, ReturnsTheScalarIndexOnRandomInputs) {
    // 200 entries pad to 224 (a 32-wide tail after 64-wide steps), 37 to 64, 1 to 32.
    for (int entries : {256, 200, 64, 37, 8, 1}) {
        const std::vector<float> centroids = random_values(static_cast<size_t>(entries) * 8, 100u + entries, 1.0f);
        for (float scale : {1.0f, 0.3f, 1e-3f, 40.0f, 1e-9f, 1e9f}) {
            std::vector<float> x = random_values(4003 * 8, 200u + entries, scale);
            for (int j = 0; j < 8; ++j) x[j] = centroids[static_cast<size_t>(j)];  // an exact hit
            expect_same_as_exhaustive(centroids, x, fmt::format("{} entries, |x| ~ {}", entries, scale));
            expect_same_as_exhaustive(scaled(centroids, scale), random_values(4001 * 8, 300u + entries, 1.0f),
                                      fmt::format("{} entries, |c| ~ {}", entries, scale));
        }
    }
}

TEST_P(VqSearchPath, ReturnsTheScalarIndexForEveryVectorCount) {
    const std::vector<float> centroids = random_values(256 * 8, 40, 1.0f);
    const std::vector<float> x = random_values(9 * 8, 41, 1.0f);
    for (size_t n = 1; n <= 9; ++n)
        expect_same_as_exhaustive(centroids, std::vector<float>(x.begin(), x.begin() + static_cast<ptrdiff_t>(n * 8)),
                                  fmt::format("{} vectors", n));
}

TEST_P(VqSearchPath, ReturnsTheScalarIndexOnAdversarialInputs) {
    // Every centroid twice: each exact hit is a tie the lower index must win.
    {
        std::vector<float> c = random_values(128 * 8, 21, 1.0f);
        c.insert(c.end(), c.begin(), c.end());
        std::vector<float> x(c.begin(), c.end());
        const std::vector<float> noise = random_values(x.size(), 22, 1e-4f);
        for (size_t i = 0; i < noise.size(); ++i) x.push_back(x[i] + noise[i]);
        expect_same_as_exhaustive(c, x, "duplicated centroids");
    }
    // Centroids and vectors on a small integer grid: distances are exact in
    // f32, so exact ties between different centroids are everywhere.
    {
        std::mt19937 rng(23);
        std::uniform_int_distribution<int> level(-2, 2), half(-4, 4);
        std::vector<float> c(256 * 8), x(20000 * 8);
        for (float& v : c) v = static_cast<float>(level(rng));
        for (float& v : x) v = 0.5f * static_cast<float>(half(rng));  // midpoints too
        expect_same_as_exhaustive(c, x, "integer grid ties");
        expect_same_as_exhaustive(c, scaled(x, 1e-3f), "integer grid, small vectors");
    }
    // Zero vectors, one-hot vectors, subnormal and out-of-range magnitudes,
    // non-finite values (these take the exhaustive path; the index must not change).
    {
        const std::vector<float> c = random_values(256 * 8, 24, 0.5f);
        std::vector<float> x(8, 0.0f);
        for (float m : {1.0f, 1e-38f, 1e-42f, 0x1p-41f, 0x1p-40f, 0x1p-39f, 0x1p39f, 0x1p40f, 0x1p41f, 1e30f, 3e38f})
            for (int j = 0; j < 8; ++j) {
                std::vector<float> v(8, 0.0f);
                v[static_cast<size_t>(j)] = m;
                x.insert(x.end(), v.begin(), v.end());
                v[static_cast<size_t>(j)] = -m;
                x.insert(x.end(), v.begin(), v.end());
                const std::vector<float> r = random_values(8, 25u + j, m);
                x.insert(x.end(), r.begin(), r.end());
            }
        for (float bad : {INFINITY, -INFINITY, NAN}) {
            std::vector<float> v = random_values(8, 26, 1.0f);
            v[3] = bad;
            x.insert(x.end(), v.begin(), v.end());
        }
        expect_same_as_exhaustive(c, x, "zero, one-hot, extreme and non-finite vectors");
    }
    // Degenerate books: all zero; one far outlier that coarsens every int8
    // code; huge and tiny scales (outside the bound's range: exhaustive);
    // a non-finite centroid.
    {
        const std::vector<float> x = random_values(3000 * 8, 27, 1.0f);
        expect_same_as_exhaustive(std::vector<float>(64 * 8, 0.0f), x, "all-zero book");
        std::vector<float> outlier = random_values(256 * 8, 28, 0.1f);
        outlier[5 * 8 + 2] = 1e4f;
        expect_same_as_exhaustive(outlier, scaled(x, 0.1f), "book with an outlier");
        expect_same_as_exhaustive(scaled(random_values(256 * 8, 29, 1.0f), 1e20f), scaled(x, 1e20f), "huge book");
        expect_same_as_exhaustive(scaled(random_values(256 * 8, 30, 1.0f), 1e-20f), scaled(x, 1e-20f), "tiny book");
        std::vector<float> with_nan = random_values(256 * 8, 31, 1.0f);
        with_nan[100 * 8 + 4] = NAN;
        expect_same_as_exhaustive(with_nan, x, "book with a NaN centroid");
    }
    // Near-ties: midpoints between random centroid pairs, nudged by one ulp either way.
    {
        const std::vector<float> c = random_values(256 * 8, 32, 1.0f);
        std::mt19937 rng(33);
        std::vector<float> x;
        for (int i = 0; i < 20000; ++i) {
            const size_t a = rng() % 256, b = rng() % 256;
            const int nudge = static_cast<int>(rng() % 3) - 1;
            for (int j = 0; j < 8; ++j) {
                float m = 0.5f * (c[a * 8 + static_cast<size_t>(j)] + c[b * 8 + static_cast<size_t>(j)]);
                if (nudge != 0) m = std::nextafter(m, nudge > 0 ? INFINITY : -INFINITY);
                x.push_back(m);
            }
        }
        expect_same_as_exhaustive(c, x, "near-ties between centroid pairs");
    }
}

// On the converter's own data (a fitted residual book, normalised rows) a
// screen must actually screen: the int8 bound left about 2 of 256 centroids
// per vector in a model of it, so more than 16 means the bound or the codes
// are broken even though the answer would still be right. (The exhaustive
// paths evaluate all 256 and only check the answer here.)
TEST_P(VqSearchPath, FittedBooks) {
    const bool screened = GetParam() == SearchPath::avx2_screened || GetParam() == SearchPath::avx512_screened;
    waste::platform::ThreadPool pool(2);
    const uint32_t rows = 64, cols = 512;
    const std::vector<float> w = random_values(static_cast<size_t>(rows) * cols, 34, 0.02f);
    std::vector<float> normalised(w.size());
    for (uint32_t r = 0; r < rows; ++r) normalise_row(&w[r * cols], cols, &normalised[r * cols]);
    StageBooks books = fit_residual_books(normalised, 3, 256, KmeansOptions{}, pool);
    std::vector<float> residual = random_values(normalised.size(), 35, 0.02f);
    for (uint32_t r = 0; r < rows; ++r) normalise_row(&residual[r * cols], cols, &residual[r * cols]);
    for (int s = 0; s < 3; ++s) {
        const SearchBook& book = books.search[static_cast<size_t>(s)];
        SearchStats stats;
        expect_same_as_exhaustive(std::vector<float>(book.centroid(0), book.centroid(0) + book.entries() * 8), residual,
                                  fmt::format("fitted book, stage {}", s), &stats);
        if (screened) {
            EXPECT_EQ(stats.exhaustive_vectors, 0u) << "stage " << s;
            const double per_vector = static_cast<double>(stats.exact_evaluations) / static_cast<double>(stats.vectors);
            EXPECT_LT(per_vector, 16.0) << "stage " << s << ": exact evaluations per vector";
        }
        std::vector<uint8_t> labels(residual.size() / 8);
        nearest_centroids(book, residual.data(), labels.size(), labels.data());
        for (size_t i = 0; i < labels.size(); ++i)
            for (int j = 0; j < 8; ++j) residual[i * 8 + static_cast<size_t>(j)] -= book.centroid(labels[i])[j];
    }
}

// ---------------------------------------------------------------- row passes

// The encoder's per-row passes have an AVX-512 copy and a generic one; both
// must give the same bits (no tolerance: the container's scales and indices
// follow from them, and the error figure is reported), on rows with NaN,
// ±inf, ±0, subnormals and lengths that are not a multiple of 16.
TEST(VqRows, AvxAndGenericPassesGiveTheSameBits) {
    namespace rp = waste::convert::row_passes;
    if (!avx512_search_available()) GTEST_SKIP() << "no AVX-512F on this CPU: only the generic row passes run here";
    const std::vector<float> c = random_values(256 * 8, 50, 0.3f);
    const SearchBook book(c);
    for (uint32_t cols : {8u, 24u, 40u, 3584u}) {
        std::vector<float> w = random_values(cols, 51 + cols, 0.02f);
        const auto bits_of = [](float v) {
            uint32_t b;
            std::memcpy(&b, &v, 4);
            return b;
        };
        EXPECT_EQ(rp::first_non_finite(w.data(), cols), cols);
        EXPECT_EQ(rp::first_non_finite(w.data(), cols, rp::RowPath::generic), cols);
        float reference = 0;
        for (float v : w) reference = std::max(reference, std::fabs(v));
        EXPECT_EQ(bits_of(rp::absmax(w.data(), cols)), bits_of(reference)) << cols;
        EXPECT_EQ(bits_of(rp::absmax(w.data(), cols, rp::RowPath::generic)), bits_of(reference)) << cols;
        std::vector<float> a(cols), b(cols);
        rp::divide(w.data(), cols, 0.0371f, a.data());
        rp::divide(w.data(), cols, 0.0371f, b.data(), rp::RowPath::generic);
        EXPECT_EQ(0, std::memcmp(a.data(), b.data(), cols * 4)) << cols;
        std::vector<uint8_t> labels(cols / 8);
        for (size_t v = 0; v < labels.size(); ++v) labels[v] = static_cast<uint8_t>(v * 37 + 11);
        std::vector<float> ra = a, rb = a;
        rp::subtract_centroids(book, labels.data(), cols / 8, ra.data());
        rp::subtract_centroids(book, labels.data(), cols / 8, rb.data(), rp::RowPath::generic);
        EXPECT_EQ(0, std::memcmp(ra.data(), rb.data(), cols * 4)) << cols;
        const rp::RowError ea = rp::row_error(w.data(), a.data(), ra.data(), cols, 0.0371);
        const rp::RowError eb = rp::row_error(w.data(), a.data(), ra.data(), cols, 0.0371, rp::RowPath::generic);
        EXPECT_EQ(ea.error2, eb.error2) << cols;
        EXPECT_EQ(ea.weight2, eb.weight2) << cols;
        // Special values, each at an index that is not a multiple of 16.
        w[cols - 3] = -0.0f;
        w[cols - 5] = 1e-42f;
        w[cols / 2 + 1] = -INFINITY;
        w[cols - 1] = NAN;
        for (rp::RowPath path : {rp::RowPath::best, rp::RowPath::generic}) {
            EXPECT_EQ(rp::first_non_finite(w.data(), cols, path), cols / 2 + 1) << cols;
            EXPECT_EQ(rp::absmax(w.data(), cols, path), INFINITY) << cols << ": NaN skipped, -inf counted";
        }
        w[cols / 2 + 1] = 0.5f;
        EXPECT_EQ(rp::first_non_finite(w.data(), cols), cols - 1);
        EXPECT_EQ(bits_of(rp::absmax(w.data(), cols)), bits_of(rp::absmax(w.data(), cols, rp::RowPath::generic)));
        EXPECT_EQ(rp::absmax(w.data(), cols), 0.5f) << cols;
    }
}

// ---------------------------------------------------------------- k-means

TEST(VqFit, KmeansFindsSeparatedClustersAndIgnoresThreadCount) {
    // 16 clusters far apart, 400 points each with small noise.
    const std::vector<float> centres = random_values(16 * 8, 3, 10.0f);
    std::vector<float> points;
    const std::vector<float> noise = random_values(16 * 400 * 8, 4, 0.01f);
    for (int i = 0; i < 16 * 400; ++i)
        for (int j = 0; j < 8; ++j) points.push_back(centres[static_cast<size_t>(i % 16) * 8 + j] + noise[static_cast<size_t>(i) * 8 + j]);
    KmeansOptions options;
    options.iterations = 30;
    options.seed = 5;
    waste::platform::ThreadPool one(1), three(3);
    const std::vector<float> a = kmeans(points, 16, options, one);
    const std::vector<float> b = kmeans(points, 16, options, three);
    EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * 4)) << "k-means must not depend on the thread count";
    // Every true centre has a centroid within the noise (k-means++ seeding finds all 16).
    for (int c = 0; c < 16; ++c) {
        double best = INFINITY;
        for (int e = 0; e < 16; ++e) {
            double d = 0;
            for (int j = 0; j < 8; ++j) d += std::pow(centres[static_cast<size_t>(c) * 8 + j] - a[static_cast<size_t>(e) * 8 + j], 2);
            best = std::min(best, d);
        }
        EXPECT_LT(std::sqrt(best), 0.05) << "cluster " << c;
    }
}

TEST(VqFit, EncodeDecodeRoundTripAndErrorFigures) {
    waste::platform::ThreadPool pool(2);
    for (const char* fmt_name : {"VQ3R", "VQ2R", "VQ4P"}) {
        const waste::format::ExpertQuant quant = waste::format::standard_expert_quant(fmt_name);
        const uint32_t rows = 100, cols = 64;  // 100 rows: a partial second row block
        const std::vector<float> w = random_values(static_cast<size_t>(rows) * cols, 11, 0.02f);
        std::vector<float> normalised(w.size());
        for (uint32_t r = 0; r < rows; ++r) normalise_row(&w[r * cols], cols, &normalised[r * cols]);
        KmeansOptions options;
        const StageBooks books = fit_residual_books(normalised, quant.stages, quant.entries, options, pool);
        ASSERT_EQ(books.f16.size(), static_cast<size_t>(quant.stages));
        const size_t index_bytes = 2 * 64 * (cols / 8) * static_cast<size_t>(quant.index_bytes_per_position());
        std::vector<uint8_t> indices(index_bytes, 0xAB);
        std::vector<uint16_t> scales(rows);
        const MatrixError err = encode_matrix(w.data(), rows, cols, books, quant, indices.data(), scales.data(), pool, "test");
        // Padding rows (100..127) hold zero indices.
        const size_t per = static_cast<size_t>(quant.index_bytes_per_position());
        for (uint32_t v = 0; v < cols / 8; ++v)
            for (uint32_t r = 100; r < 128; ++r)
                for (size_t s = 0; s < per; ++s)
                    EXPECT_EQ(indices[((1 * (cols / 8) + v) * 64 + r % 64) * per + s], 0);
        std::vector<std::vector<float>> f32_books;
        for (const auto& b : books.f16) {
            std::vector<float> values;
            for (uint16_t h : b) values.push_back(waste::format::f16_to_f32(h));
            f32_books.push_back(values);
        }
        std::vector<float> decoded(w.size());
        decode_matrix(indices.data(), scales.data(), rows, cols, f32_books, quant, decoded.data());
        double e2 = 0, w2 = 0;
        for (size_t i = 0; i < w.size(); ++i) {
            e2 += std::pow(double(w[i]) - decoded[i], 2);
            w2 += double(w[i]) * w[i];
        }
        EXPECT_NEAR(e2, err.error2, 1e-6 * w2) << fmt_name << ": the reported error is the decoded one";
        EXPECT_NEAR(w2, err.weight2, 1e-9 * w2);
        // Gaussian data at these rates: well under 40% (a layout error gives ~100%).
        EXPECT_LT(std::sqrt(e2 / w2), 0.4) << fmt_name;
        // Rows scale by their absmax: a decoded row never exceeds |scale| * S * max|centroid| — and scale is f16(absmax).
        for (uint32_t r = 0; r < rows; ++r) {
            float absmax = 0;
            for (uint32_t i = 0; i < cols; ++i) absmax = std::max(absmax, std::fabs(w[r * cols + i]));
            EXPECT_EQ(scales[r], waste::format::f32_to_f16(absmax));
        }
    }
}

// ---------------------------------------------------------------- checkpoints

uint16_t to_bf16(float value) {
    uint32_t bits;
    std::memcpy(&bits, &value, 4);
    bits += 0x7FFF + ((bits >> 16) & 1);  // round to nearest even
    return static_cast<uint16_t>(bits >> 16);
}

struct HfTensor {
    std::string dtype;  // "F32" or "BF16"
    std::vector<int64_t> shape;
    std::vector<float> values;
};

void write_safetensors(const fs::path& path, const std::map<std::string, HfTensor>& tensors) {
    json header = json::object();
    std::string data;
    for (const auto& [name, t] : tensors) {
        const size_t begin = data.size();
        for (float v : t.values) {
            if (t.dtype == "BF16") {
                const uint16_t h = to_bf16(v);
                data.append(reinterpret_cast<const char*>(&h), 2);
            } else {
                data.append(reinterpret_cast<const char*>(&v), 4);
            }
        }
        header[name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {begin, data.size()}}};
    }
    std::string text = header.dump();
    while ((8 + text.size()) % 8) text += ' ';
    const uint64_t length = text.size();
    std::string bytes(reinterpret_cast<const char*>(&length), 8);
    waste_test::write_file(path, bytes + text + data);
}

// A tiny Kimi-Linear-like release: layer 0 KDA + dense FFN, layer 1 MLA + MoE,
// written as two shards (trunk, experts) with an index.
ordered_json tiny_config() {
    return ordered_json{{"model_type", "kimi_linear"},
                        {"architectures", {"KimiLinearForCausalLM"}},
                        {"hidden_size", 64},
                        {"num_hidden_layers", 2},
                        {"first_k_dense_replace", 1},
                        {"intermediate_size", 1100},  // dense FFN of 70,400 values: Q4G by the rule
                        {"moe_intermediate_size", 32},
                        {"num_experts", 4},
                        {"num_experts_per_token", 2},
                        {"num_shared_experts", 1},
                        {"moe_renormalize", true},
                        {"moe_router_activation_func", "sigmoid"},
                        {"routed_scaling_factor", 2.0},
                        {"num_attention_heads", 2},
                        {"qk_nope_head_dim", 16},
                        {"qk_rope_head_dim", 8},
                        {"v_head_dim", 16},
                        {"kv_lora_rank", 32},
                        {"q_lora_rank", nullptr},
                        {"mla_use_nope", true},
                        {"rms_norm_eps", 1e-5},
                        {"vocab_size", 1100},  // embed/lm_head of 70,400 values: Q8G
                        {"tie_word_embeddings", false},
                        {"bos_token_id", 290},
                        {"eos_token_id", 291},
                        {"linear_attn_config",
                         {{"head_dim", 16}, {"num_heads", 2}, {"short_conv_kernel_size", 4}, {"kda_layers", {1}},
                          {"full_attn_layers", {2}}}}};
}

std::map<std::string, HfTensor> tiny_tensors() {
    std::map<std::string, HfTensor> t;
    uint32_t seed = 100;
    auto add = [&](const std::string& name, std::vector<int64_t> shape, const char* dtype = "F32") {
        size_t n = 1;
        for (int64_t d : shape) n *= static_cast<size_t>(d);
        t[name] = HfTensor{dtype, shape, random_values(n, seed++, 0.1f)};
    };
    const int64_t H = 64, C = 32, D = 16;
    add("model.embed_tokens.weight", {1100, H});
    add("model.norm.weight", {H});
    add("lm_head.weight", {1100, H});
    for (int l = 0; l < 2; ++l) {
        const std::string lx = "model.layers." + std::to_string(l) + ".";
        add(lx + "input_layernorm.weight", {H});
        add(lx + "post_attention_layernorm.weight", {H});
    }
    const std::string a0 = "model.layers.0.self_attn.";
    for (const char* p : {"q_proj", "k_proj", "v_proj"}) add(a0 + p + ".weight", {C, H});
    for (const char* p : {"q_conv1d", "k_conv1d", "v_conv1d"}) add(a0 + p + ".weight", {C, 1, 4});
    add(a0 + "f_a_proj.weight", {D, H});
    add(a0 + "f_b_proj.weight", {C, D});
    add(a0 + "b_proj.weight", {2, H});
    add(a0 + "A_log", {1, 1, 2, 1});
    add(a0 + "dt_bias", {C});
    add(a0 + "g_a_proj.weight", {D, H});
    add(a0 + "g_b_proj.weight", {C, D});
    add(a0 + "o_norm.weight", {D});
    add(a0 + "o_proj.weight", {H, C});
    add("model.layers.0.mlp.gate_proj.weight", {1100, H}, "BF16");
    add("model.layers.0.mlp.up_proj.weight", {1100, H}, "BF16");
    add("model.layers.0.mlp.down_proj.weight", {H, 1100}, "BF16");
    const std::string a1 = "model.layers.1.self_attn.";
    add(a1 + "q_proj.weight", {2 * 24, H});
    add(a1 + "kv_a_proj_with_mqa.weight", {32 + 8, H});
    add(a1 + "kv_a_layernorm.weight", {32});
    add(a1 + "kv_b_proj.weight", {2 * 32, 32});
    add(a1 + "o_proj.weight", {H, 2 * 16});
    const std::string m = "model.layers.1.block_sparse_moe.";
    add(m + "gate.weight", {4, H});
    add(m + "gate.e_score_correction_bias", {4});
    add(m + "shared_experts.gate_proj.weight", {32, H});
    add(m + "shared_experts.up_proj.weight", {32, H});
    add(m + "shared_experts.down_proj.weight", {H, 32});
    for (int e = 0; e < 4; ++e) {
        const std::string x = m + "experts." + std::to_string(e) + ".";
        add(x + "w1.weight", {32, H}, "BF16");
        add(x + "w3.weight", {32, H}, "BF16");
        add(x + "w2.weight", {H, 32}, "BF16");
    }
    return t;
}

void write_checkpoint(const fs::path& dir, const std::map<std::string, HfTensor>& tensors,
                      const ordered_json& config = tiny_config()) {
    fs::create_directories(dir);
    std::map<std::string, HfTensor> trunk, experts;
    json weight_map = json::object();
    for (const auto& [name, t] : tensors) {
        const bool expert = name.find(".experts.") != std::string::npos;
        (expert ? experts : trunk)[name] = t;
        weight_map[name] = expert ? "model-00002-of-00002.safetensors" : "model-00001-of-00002.safetensors";
    }
    write_safetensors(dir / "model-00001-of-00002.safetensors", trunk);
    write_safetensors(dir / "model-00002-of-00002.safetensors", experts);
    waste_test::write_file(dir / "model.safetensors.index.json",
                           json{{"metadata", json::object()}, {"weight_map", weight_map}}.dump(1));
    waste_test::write_file(dir / "config.json", config.dump(2));
    // A tokenizer: 256 byte ranks + 34 merges of two bytes, then specials.
    std::string ranks;
    static const char* b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    auto encode = [&](const std::string& s) {
        std::string out;
        for (size_t i = 0; i < s.size(); i += 3) {
            uint32_t v = uint32_t(uint8_t(s[i])) << 16;
            if (i + 1 < s.size()) v |= uint32_t(uint8_t(s[i + 1])) << 8;
            if (i + 2 < s.size()) v |= uint8_t(s[i + 2]);
            out += b64[v >> 18 & 63];
            out += b64[v >> 12 & 63];
            out += i + 1 < s.size() ? b64[v >> 6 & 63] : '=';
            out += i + 2 < s.size() ? b64[v & 63] : '=';
        }
        return out;
    };
    for (int b = 0; b < 256; ++b) ranks += encode(std::string(1, char(b))) + " " + std::to_string(b) + "\n";
    for (int i = 0; i < 34; ++i) ranks += encode(std::string{char('a' + i % 26), char('a' + i / 26 + 1)}) + " " + std::to_string(256 + i) + "\n";
    waste_test::write_file(dir / "tiktoken.model", ranks);
    waste_test::write_file(dir / "tokenizer_config.json",
                           json{{"added_tokens_decoder",
                                 {{"290", {{"content", "[BOS]"}, {"special", true}}},
                                  {"291", {{"content", "[EOS]"}, {"special", true}}},
                                  {"292", {{"content", "<|im_end|>"}}},
                                  {"293", {{"content", "<|im_user|>"}}},
                                  {"294", {{"content", "<|im_assistant|>"}}},
                                  {"295", {{"content", "<|im_system|>"}}},
                                  {"296", {{"content", "<|im_middle|>"}}}}}}
                               .dump());
}

using waste_test::container_files;

ConvertOptions small_options(unsigned jobs) {
    ConvertOptions options;
    options.jobs = jobs;
    options.sample_experts = 3;
    options.train_vectors = 2048;
    options.iterations = 6;
    return options;
}

// Runs a conversion that options.progress stops: it must end cancelled.
// Wrap the call in ASSERT_NO_FATAL_FAILURE to stop the test when it did not.
void expect_cancelled(const fs::path& src, const fs::path& out, const ConvertOptions& options) {
    try {
        convert_checkpoint(src.string(), out.string(), options);
        FAIL() << "not interrupted (" << out.filename().string() << ")";
    } catch (const waste::Error& e) {
        EXPECT_EQ(e.status(), WASTE_ERR_CANCELLED) << e.what();
    }
}

TEST(Convert, DeterministicAcrossJobsAndReadable) {
    waste_test::TempDir tmp;
    write_checkpoint(tmp / "src", tiny_tensors());
    const json a = convert_checkpoint((tmp / "src").string(), (tmp / "a").string(), small_options(1));
    convert_checkpoint((tmp / "src").string(), (tmp / "b").string(), small_options(3));
    const auto fa = container_files(tmp / "a"), fb = container_files(tmp / "b");
    ASSERT_EQ(fa.size(), fb.size());
    for (const auto& [name, bytes] : fa) EXPECT_TRUE(fb.at(name) == bytes) << name << " differs between --jobs 1 and 3";
    for (const char* name : {"manifest.json", "trunk.bin", "codebooks.bin", "experts-L1.bin", "tokenizer.model",
                             "specials.json", "chat.json"})
        EXPECT_TRUE(fa.count(name)) << name;
    // The reader opens it, with every record's CRC.
    waste::format::ContainerOptions open_options;
    open_options.verify_checksums = true;
    const auto container = waste::format::Container::open((tmp / "a").string(), open_options);
    container->load_trunk();
    EXPECT_EQ(container->manifest().quant.fmt_name, "VQ3R");
    EXPECT_EQ(container->manifest().trunk.front().name, "model.embed_tokens.weight");
    // The converter rule (container-v0 §3): Q8G embed/lm_head, Q4G other tensors of
    // >= 65,536 values, F32 for 1-D and smaller ones.
    const auto& m = container->manifest();
    EXPECT_EQ(m.find("model.embed_tokens.weight")->fmt, waste::format::TrunkFormat::q8g);
    EXPECT_EQ(m.find("lm_head.weight")->fmt, waste::format::TrunkFormat::q8g);
    EXPECT_EQ(m.find("model.layers.0.mlp.down_proj.weight")->fmt, waste::format::TrunkFormat::q4g);
    EXPECT_EQ(m.find("model.layers.0.self_attn.q_proj.weight")->fmt, waste::format::TrunkFormat::f32);
    EXPECT_EQ(m.find("model.norm.weight")->fmt, waste::format::TrunkFormat::f32);
    // Specials: ids 290..1099, named from tokenizer_config.json, the rest reserved.
    const json specials = json::parse(fa.at("specials.json"));
    ASSERT_EQ(specials.size(), 810u);
    EXPECT_EQ(specials[0]["text"], "[BOS]");
    EXPECT_EQ(specials[809]["text"], "<|reserved_token_1099|>");
    EXPECT_EQ(json::parse(fa.at("chat.json"))["open"], "<|im_assistant|>assistant<|im_middle|>");
    ASSERT_EQ(a["layers"].size(), 1u);
    EXPECT_GT(a["layers"][0]["error"].get<double>(), 0.0);
    EXPECT_LT(a["layers"][0]["error"].get<double>(), 0.35);
    // verify --source agrees and passes.
    const json report = verify_against_source((tmp / "a").string(), (tmp / "src").string(), {});
    EXPECT_TRUE(report["ok"].get<bool>()) << report.dump();
    EXPECT_NEAR(report["layers"][0]["error"].get<double>(), a["layers"][0]["error"].get<double>(), 1e-6);
    for (const json& t : report["trunk"])
        if (t["fmt"] == "Q4G") {
            EXPECT_GT(t["error"].get<double>(), 0.01) << "a Q4G tensor is really quantised";
        }
}

// A Hugging Face release (tokenizer.json, no tiktoken.model): the file is
// stored verbatim in place of tokenizer.model and specials.json, and the
// container is tokenised by it; one the engine cannot tokenise exactly is
// refused, naming the component.
TEST(Convert, TokenizerJsonStoredVerbatim) {
    waste_test::TempDir tmp;
    write_checkpoint(tmp / "src", tiny_tensors());
    fs::remove(tmp / "src" / "tiktoken.model");
    const std::string tokenizer_json = waste_test::small_tokenizer({"ab"}, {"a b"}).dump(1);
    waste_test::write_file(tmp / "src" / "tokenizer.json", tokenizer_json);
    const json summary = convert_checkpoint((tmp / "src").string(), (tmp / "a").string(), small_options(1));
    EXPECT_TRUE(summary["tokenizer"].get<bool>());
    const auto files = container_files(tmp / "a");
    ASSERT_TRUE(files.count("tokenizer.json"));
    EXPECT_TRUE(files.at("tokenizer.json") == tokenizer_json);
    EXPECT_FALSE(files.count("tokenizer.model"));
    EXPECT_FALSE(files.count("specials.json"));
    const auto container = waste::format::Container::open((tmp / "a").string(), {});
    const auto tokenizer = waste::text::load_container_tokenizer(*container, std::nullopt);
    EXPECT_EQ(tokenizer->encode("ab<|end|>", true), (std::vector<int32_t>{256, 257}));

    json unsupported = json::parse(tokenizer_json);
    unsupported["normalizer"] = {{"type", "NFKC"}};
    waste_test::write_file(tmp / "src" / "tokenizer.json", unsupported.dump());
    try {
        convert_checkpoint((tmp / "src").string(), (tmp / "b").string(), small_options(1));
        FAIL() << "an NFKC tokenizer.json was converted";
    } catch (const waste::Error& e) {
        EXPECT_EQ(e.status(), WASTE_ERR_UNSUPPORTED) << e.what();
        EXPECT_NE(std::string(e.what()).find("normalizer type \"NFKC\""), std::string::npos) << e.what();
    }
}

// --small-matrices quantized: the 2-D trunk matrices under 65,536 values are
// quantised as a large model's are (Q4G; Q8G for embed/lm_head), vectors and
// convolutions stay F32, and verify --source holds them to the Q4G limit.
TEST(Convert, SmallMatricesQuantizedLikeLargeOnes) {
    waste_test::TempDir tmp;
    write_checkpoint(tmp / "src", tiny_tensors());
    ConvertOptions options = small_options(2);
    options.quantize_small_matrices = true;
    convert_checkpoint((tmp / "src").string(), (tmp / "q").string(), options);
    const auto container = waste::format::Container::open((tmp / "q").string(), {});
    const auto& m = container->manifest();
    EXPECT_EQ(m.find("model.layers.0.self_attn.q_proj.weight")->fmt, waste::format::TrunkFormat::q4g);
    EXPECT_EQ(m.find("model.layers.0.mlp.down_proj.weight")->fmt, waste::format::TrunkFormat::q4g);
    EXPECT_EQ(m.find("model.embed_tokens.weight")->fmt, waste::format::TrunkFormat::q8g);
    EXPECT_EQ(m.find("model.norm.weight")->fmt, waste::format::TrunkFormat::f32);
    for (const auto& t : m.trunk) {
        if (t.shape.size() != 2) {
            EXPECT_EQ(t.fmt, waste::format::TrunkFormat::f32) << t.name;
        }
    }
    const json report = verify_against_source((tmp / "q").string(), (tmp / "src").string(), {});
    EXPECT_TRUE(report["ok"].get<bool>()) << report.dump();
    // The option is part of the conversion's identity: the default conversion
    // into the same folder starts over rather than resuming, and differs.
    convert_checkpoint((tmp / "src").string(), (tmp / "q").string(), small_options(2));
    const auto plain = waste::format::Container::open((tmp / "q").string(), {});
    EXPECT_EQ(plain->manifest().find("model.layers.0.self_attn.q_proj.weight")->fmt, waste::format::TrunkFormat::f32);
}

// --trunk-matrices q8 stores what the rule would store Q4G as Q8G (and
// nothing else); --trunk-scales absmax gives container-v0's convention, the
// default fitted scales a smaller error on every Q4G tensor (verify
// --source's relative RMS error, the same weights); each is part of the
// conversion's identity, so a conversion with the other starts over.
TEST(Convert, TrunkMatricesAndScalesOptions) {
    waste_test::TempDir tmp;
    write_checkpoint(tmp / "src", tiny_tensors());
    ConvertOptions options = small_options(2);
    options.trunk_matrices = waste::format::TrunkFormat::q8g;
    convert_checkpoint((tmp / "src").string(), (tmp / "c").string(), options);
    {
        const auto q8 = waste::format::Container::open((tmp / "c").string(), {});
        EXPECT_EQ(q8->manifest().find("model.layers.0.mlp.down_proj.weight")->fmt, waste::format::TrunkFormat::q8g);
        EXPECT_EQ(q8->manifest().find("model.layers.0.self_attn.q_proj.weight")->fmt, waste::format::TrunkFormat::f32);
        EXPECT_EQ(q8->manifest().find("model.norm.weight")->fmt, waste::format::TrunkFormat::f32);
        const json report = verify_against_source((tmp / "c").string(), (tmp / "src").string(), {});
        EXPECT_TRUE(report["ok"].get<bool>()) << report.dump();
    }
    std::map<std::string, double> q4_error[2];
    for (const bool fitted : {false, true}) {
        ConvertOptions o = small_options(2);
        o.trunk_scales = fitted ? waste::format::TrunkScales::fitted : waste::format::TrunkScales::absmax;
        convert_checkpoint((tmp / "src").string(), (tmp / "c").string(), o);  // the same folder: starts over
        const auto c = waste::format::Container::open((tmp / "c").string(), {});
        EXPECT_EQ(c->manifest().find("model.layers.0.mlp.down_proj.weight")->fmt, waste::format::TrunkFormat::q4g);
        const json report = verify_against_source((tmp / "c").string(), (tmp / "src").string(), {});
        EXPECT_TRUE(report["ok"].get<bool>()) << report.dump();
        for (const json& t : report["trunk"])
            if (t["fmt"] == "Q4G") q4_error[fitted][t["name"].get<std::string>()] = t["error"].get<double>();
    }
    ASSERT_FALSE(q4_error[0].empty());
    ASSERT_EQ(q4_error[0].size(), q4_error[1].size());
    for (const auto& [name, absmax_error] : q4_error[0]) EXPECT_LT(q4_error[1].at(name), absmax_error) << name;
}

TEST(Convert, ResumeAfterInterruptionIsByteIdentical) {
    waste_test::TempDir tmp;
    write_checkpoint(tmp / "src", tiny_tensors());
    convert_checkpoint((tmp / "src").string(), (tmp / "ref").string(), small_options(2));
    const auto want = container_files(tmp / "ref");
    uint64_t total = 0;
    {
        ConvertOptions probe = small_options(2);
        probe.progress = [&](uint64_t, uint64_t t) { total = t; return true; };
        convert_checkpoint((tmp / "src").string(), (tmp / "probe").string(), probe);
    }
    ASSERT_GT(total, 0u);
    // Cut at several points (inside the first unit, inside the MoE layer's
    // bank, after the last unit), each time also leaving the junk a kill -9
    // would (a half-written bank .tmp, a stray part), then resume.
    for (const double cut : {0.01, 0.5, 0.9, 0.999}) {
        const fs::path out = tmp / ("cut" + std::to_string(cut));
        ConvertOptions interrupted = small_options(1);
        interrupted.progress = [&](uint64_t done, uint64_t) { return done < cut * total; };
        ASSERT_NO_FATAL_FAILURE(expect_cancelled(tmp / "src", out, interrupted)) << "cut at " << cut;
        EXPECT_FALSE(fs::exists(out / "manifest.json")) << "nothing is published by an interrupted run";
        waste_test::write_file(out / "experts-L1.bin.tmp", std::string(5000, 'x'));
        waste_test::write_file(out / ".waste-convert" / "trunk-0002.part.tmp", "junk");
        ConvertOptions resume = small_options(3);
        int resumed = 0;
        resume.event = [&](const json& e) { resumed += e.value("resumed", false); };
        const json summary = convert_checkpoint((tmp / "src").string(), out.string(), resume);
        const auto got = container_files(out);
        ASSERT_EQ(got.size(), want.size()) << "cut " << cut;
        for (const auto& [name, bytes] : want) EXPECT_TRUE(got.at(name) == bytes) << name << " differs after a cut at " << cut;
        if (cut > 0.5) {
            EXPECT_GT(resumed, 0) << "finished units are not redone";
        }
    }
}

TEST(Convert, ReclaimDeletesOnlyFinishedShards) {
    waste_test::TempDir tmp;
    write_checkpoint(tmp / "src", tiny_tensors());
    ConvertOptions dry = small_options(2);
    dry.reclaim = Reclaim::dry;
    std::vector<std::string> listed;
    dry.event = [&](const json& e) {
        if (e.contains("reclaim")) listed.push_back(e["reclaim"]);
    };
    convert_checkpoint((tmp / "src").string(), (tmp / "dry").string(), dry);
    EXPECT_EQ(listed.size(), 2u);
    EXPECT_TRUE(fs::exists(tmp / "src" / "model-00001-of-00002.safetensors")) << "dry deletes nothing";
    ConvertOptions on = small_options(2);
    on.reclaim = Reclaim::on;
    std::vector<std::pair<std::string, size_t>> order;  // shard, units finished when it went
    size_t units = 0;
    on.event = [&](const json& e) {
        if (e.contains("reclaim")) order.emplace_back(e["reclaim"], units);
        else ++units;
    };
    const json summary = convert_checkpoint((tmp / "src").string(), (tmp / "on").string(), on);
    ASSERT_EQ(order.size(), 2u);
    // The expert shard goes after the MoE layer (unit 3 of 4: embed, layer 0, layer 1, final);
    // the trunk shard only after the last unit (lm_head lives there).
    EXPECT_EQ(order[0].first, "model-00002-of-00002.safetensors");
    EXPECT_EQ(order[0].second, 3u);
    EXPECT_EQ(order[1].first, "model-00001-of-00002.safetensors");
    EXPECT_EQ(order[1].second, 4u);
    EXPECT_FALSE(fs::exists(tmp / "src" / "model-00001-of-00002.safetensors"));
    EXPECT_EQ(summary["reclaimed"].size(), 2u);
    const auto a = container_files(tmp / "dry"), b = container_files(tmp / "on");
    for (const auto& [name, bytes] : a) EXPECT_TRUE(b.at(name) == bytes) << name;
}

TEST(Convert, ResumeAfterReclaimIsByteIdentical) {
    waste_test::TempDir tmp;
    write_checkpoint(tmp / "src", tiny_tensors());
    fs::copy(tmp / "src", tmp / "intact", fs::copy_options::recursive);
    convert_checkpoint((tmp / "intact").string(), (tmp / "ref").string(), small_options(2));
    const auto want = container_files(tmp / "ref");
    // Interrupted at the first progress step after a shard went (the expert
    // shard, after the MoE layer; the final unit is still to do).
    ConvertOptions interrupted = small_options(1);
    interrupted.reclaim = Reclaim::on;
    bool reclaimed = false;
    interrupted.event = [&](const json& e) { reclaimed = reclaimed || e.value("deleted", false); };
    interrupted.progress = [&](uint64_t, uint64_t) { return !reclaimed; };
    ASSERT_NO_FATAL_FAILURE(expect_cancelled(tmp / "src", tmp / "out", interrupted));
    ASSERT_FALSE(fs::exists(tmp / "src" / "model-00002-of-00002.safetensors")) << "a shard was reclaimed";
    ASSERT_TRUE(fs::exists(tmp / "src" / "model-00001-of-00002.safetensors"));
    EXPECT_FALSE(fs::exists(tmp / "out" / "manifest.json"));
    // Reading a tensor of the reclaimed shard is an error naming both.
    {
        waste::convert::CheckpointOpenOptions open_options =
            waste::convert::recorded_reclaimed_shards((tmp / "out").string());
        ASSERT_EQ(open_options.reclaimed.size(), 1u);
        const auto ck = waste::convert::Checkpoint::open(tmp / "src", open_options);
        const std::string expert = "model.layers.1.block_sparse_moe.experts.0.w1.weight";
        ASSERT_TRUE(ck.has(expert));
        EXPECT_FALSE(ck.info(expert).shape.empty()) << "shapes come from the recorded header";
        try {
            (void)ck.read_f32(expert);
            ADD_FAILURE() << "read a reclaimed tensor";
        } catch (const waste::Error& e) {
            EXPECT_NE(std::string(e.what()).find(expert), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find("model-00002-of-00002.safetensors"), std::string::npos) << e.what();
        }
    }
    // The rerun completes (and reclaims the trunk shard), byte-identical to the intact conversion.
    ConvertOptions resume = small_options(3);
    resume.reclaim = Reclaim::on;
    const json summary = convert_checkpoint((tmp / "src").string(), (tmp / "out").string(), resume);
    EXPECT_EQ(summary["reclaimed"].size(), 2u);
    EXPECT_GT(summary["resumed_units"].get<int>(), 0);
    const auto got = container_files(tmp / "out");
    ASSERT_EQ(got.size(), want.size());
    for (const auto& [name, bytes] : want) EXPECT_TRUE(got.at(name) == bytes) << name << " differs after a reclaimed resume";

    // A ledger that does not list the reclaimed shard's units as done: refused
    // naming the tensor and the shard, nothing published.
    {
        fs::copy(tmp / "intact", tmp / "src2", fs::copy_options::recursive);
        ConvertOptions cut = interrupted;
        reclaimed = false;
        try {
            convert_checkpoint((tmp / "src2").string(), (tmp / "out2").string(), cut);
            FAIL() << "not interrupted";
        } catch (const waste::Error&) {
        }
        const fs::path ledger_path = tmp / "out2" / ".waste-convert" / "ledger.json";
        json ledger = json::parse(waste_test::read_file(ledger_path));
        ASSERT_TRUE(ledger["units"].contains("layer 1"));
        ledger["units"].erase("layer 1");
        waste_test::write_file(ledger_path, ledger.dump(1));
        try {
            convert_checkpoint((tmp / "src2").string(), (tmp / "out2").string(), small_options(1));
            ADD_FAILURE() << "converted without the reclaimed shard's tensors";
        } catch (const waste::Error& e) {
            EXPECT_NE(std::string(e.what()).find("model-00002-of-00002.safetensors"), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find("layer 1"), std::string::npos) << e.what();
        }
        EXPECT_FALSE(fs::exists(tmp / "out2" / "manifest.json"));
    }
    // A shard missing without a ledger entry is still refused, naming it.
    fs::copy(tmp / "intact", tmp / "src3", fs::copy_options::recursive);
    fs::remove(tmp / "src3" / "model-00002-of-00002.safetensors");
    try {
        convert_checkpoint((tmp / "src3").string(), (tmp / "out3").string(), small_options(1));
        ADD_FAILURE() << "converted with a shard missing";
    } catch (const waste::Error& e) {
        EXPECT_NE(std::string(e.what()).find("model-00002-of-00002.safetensors"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("missing"), std::string::npos) << e.what();
    }
}

// A compressed-tensors INT4 release keeps each weight's `_shape` beside its
// packed codes; indexing the checkpoint reads those two integers for every
// weight, including the ones a reclaimed shard held. The converter keeps the
// values of a reclaimed shard's tiny tensors, so the resumed run indexes the
// checkpoint and finishes byte-identical to an uninterrupted conversion.
TEST(Convert, ResumeAfterReclaimWithInt4ShapesIsByteIdentical) {
    auto synth = waste_test::hf_synth("--model kimi-linear --experts-format int4 --shards 3");
    ASSERT_TRUE(fs::exists(synth->dir / "config.json"));
    waste_test::TempDir tmp;
    fs::copy(synth->dir, tmp / "src", fs::copy_options::recursive);
    fs::copy(synth->dir, tmp / "intact", fs::copy_options::recursive);
    convert_checkpoint((tmp / "intact").string(), (tmp / "ref").string(), small_options(2));
    const auto want = container_files(tmp / "ref");

    // the shards holding INT4 `_shape` tensors
    std::set<std::string> shape_shards;
    for (const auto& entry : fs::directory_iterator(tmp / "intact")) {
        if (entry.path().extension() != ".safetensors") continue;
        const SafetensorsFile shard = SafetensorsFile::open(entry.path());
        for (const TensorEntry& t : shard.tensors())
            if (t.name.ends_with("_shape")) shape_shards.insert(entry.path().filename().string());
    }
    ASSERT_FALSE(shape_shards.empty()) << "the writer wrote no INT4 _shape: the test would not test what it says";
    // interrupted at the first progress step after such a shard went
    ConvertOptions interrupted = small_options(1);
    interrupted.reclaim = Reclaim::on;
    bool shape_shard_deleted = false;
    interrupted.event = [&](const json& e) {
        if (e.value("deleted", false) && shape_shards.count(e["reclaim"].get<std::string>())) shape_shard_deleted = true;
    };
    interrupted.progress = [&](uint64_t, uint64_t) { return !shape_shard_deleted; };
    ASSERT_NO_FATAL_FAILURE(expect_cancelled(tmp / "src", tmp / "out", interrupted));
    ASSERT_TRUE(shape_shard_deleted);
    // A kept-tensors file that is not lowercase hex is refused, naming it, and
    // nothing is published.
    {
        fs::copy(tmp / "out", tmp / "out-bad", fs::copy_options::recursive);
        fs::path kept_file;
        for (const auto& entry : fs::directory_iterator(tmp / "out-bad" / ".waste-convert"))
            if (entry.path().filename().string().ends_with(".kept.json")) kept_file = entry.path();
        ASSERT_FALSE(kept_file.empty()) << "no kept tensors were recorded";
        json kept = json::parse(waste_test::read_file(kept_file));
        ASSERT_FALSE(kept.empty());
        kept.begin().value() = "0g";
        waste_test::write_file(kept_file, kept.dump());
        try {
            convert_checkpoint((tmp / "src").string(), (tmp / "out-bad").string(), small_options(1));
            ADD_FAILURE() << "resumed from a corrupt kept-tensors file";
        } catch (const waste::Error& e) {
            EXPECT_NE(std::string(e.what()).find(kept_file.filename().string()), std::string::npos) << e.what();
        }
        EXPECT_FALSE(fs::exists(tmp / "out-bad" / "manifest.json"));
    }

    ConvertOptions resume = small_options(2);
    resume.reclaim = Reclaim::on;
    const json summary = convert_checkpoint((tmp / "src").string(), (tmp / "out").string(), resume);
    EXPECT_GT(summary["resumed_units"].get<int>(), 0);
    const auto got = container_files(tmp / "out");
    ASSERT_EQ(got.size(), want.size());
    for (const auto& [name, bytes] : want) EXPECT_TRUE(got.at(name) == bytes) << name << " differs after a reclaimed resume";
}

void expect_refused(const fs::path& src, const fs::path& out, const std::vector<std::string>& words) {
    try {
        convert_checkpoint(src.string(), out.string(), small_options(1));
        ADD_FAILURE() << "converted a bad checkpoint";
    } catch (const waste::Error& e) {
        for (const std::string& word : words)
            EXPECT_NE(std::string(e.what()).find(word), std::string::npos) << e.what() << " does not name " << word;
    }
    EXPECT_FALSE(fs::exists(out)) << "a refused checkpoint leaves no output";
}

TEST(Convert, HostileCheckpointsAreRefusedBeforeAnyOutput) {
    waste_test::TempDir tmp;
    {
        auto t = tiny_tensors();
        t.erase("model.layers.1.block_sparse_moe.experts.2.w3.weight");
        write_checkpoint(tmp / "missing", t);
        expect_refused(tmp / "missing", tmp / "o1", {"experts.2.w3.weight"});
    }
    {
        auto t = tiny_tensors();
        t["model.layers.0.self_attn.o_proj.weight"].shape = {32, 64};  // transposed
        write_checkpoint(tmp / "shape", t);
        expect_refused(tmp / "shape", tmp / "o2", {"o_proj.weight", "model-00001-of-00002.safetensors", "[64, 32]"});
    }
    {
        ordered_json config = tiny_config();
        config["model_type"] = "llama";
        write_checkpoint(tmp / "arch", tiny_tensors(), config);
        expect_refused(tmp / "arch", tmp / "o3", {"llama"});
    }
    {
        auto t = tiny_tensors();
        t["model.layers.1.block_sparse_moe.experts.0.w9.weight"] = t["model.layers.1.block_sparse_moe.experts.0.w1.weight"];
        write_checkpoint(tmp / "extra", t);
        expect_refused(tmp / "extra", tmp / "o4", {"experts.0.w9.weight"});
    }
    {
        write_checkpoint(tmp / "truncated", tiny_tensors());
        const fs::path shard = tmp / "truncated" / "model-00002-of-00002.safetensors";
        fs::resize_file(shard, fs::file_size(shard) - 100);
        expect_refused(tmp / "truncated", tmp / "o5", {"model-00002-of-00002.safetensors"});
    }
    {
        write_checkpoint(tmp / "noshard", tiny_tensors());
        fs::remove(tmp / "noshard" / "model-00002-of-00002.safetensors");
        expect_refused(tmp / "noshard", tmp / "o6", {"model-00002-of-00002.safetensors"});
    }
    {
        auto t = tiny_tensors();
        t["model.layers.1.block_sparse_moe.experts.3.w2.weight"].values[17] = NAN;
        write_checkpoint(tmp / "nan", t);
        try {
            convert_checkpoint((tmp / "nan").string(), (tmp / "o7").string(), small_options(1));
            ADD_FAILURE() << "converted a NaN weight";
        } catch (const waste::Error& e) {
            EXPECT_NE(std::string(e.what()).find("experts.3.w2.weight"), std::string::npos) << e.what();
        }
        EXPECT_FALSE(fs::exists(tmp / "o7" / "manifest.json"));
    }
}

}  // namespace

namespace {

// Seconds per expert of the encoder at a realistic expert shape (not a
// timed assertion: run with --gtest_also_run_disabled_tests; prints JSON
// lines). WASTE_CONVERT_BENCH="rows cols experts" overrides the shape
// (default Kimi-Linear's 1024 x 2304, 3 matrices per expert). The exhaustive
// AVX2 search and the screened one run in the same process, so their ratio
// survives a loaded machine better than either time; CPU seconds (all threads)
// are printed beside wall seconds for the same reason.
double cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// f32 FMAs per second one core sustains: 12 independent chains of register
// FMAs for ~0.2 s (enough chains to cover the FMA latency of any current x86
// core), on the widest registers the search paths use here.
#if defined(__x86_64__) && !defined(__clang__)
template <typename V>
__attribute__((always_inline)) inline double fma_rate(V m, V c) {
    // Named values, not an array: an array would live in memory between the asm barriers.
    V a0 = m, a1 = m * 2, a2 = m * 3, a3 = m * 4, a4 = m * 5, a5 = m * 6, a6 = m * 7, a7 = m * 8, a8 = m * 9,
      a9 = m * 10, a10 = m * 11, a11 = m * 12;
    const long iterations = 20000000;
    const auto start = std::chrono::steady_clock::now();
    for (long i = 0; i < iterations; ++i) {
        // Each contracted to one FMA (the target has FMA; GCC contracts by default).
        a0 = a0 * m + c, a1 = a1 * m + c, a2 = a2 * m + c, a3 = a3 * m + c, a4 = a4 * m + c, a5 = a5 * m + c;
        a6 = a6 * m + c, a7 = a7 * m + c, a8 = a8 * m + c, a9 = a9 * m + c, a10 = a10 * m + c, a11 = a11 * m + c;
        __asm__ volatile("" : "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3), "+v"(a4), "+v"(a5), "+v"(a6), "+v"(a7), "+v"(a8),
                         "+v"(a9), "+v"(a10), "+v"(a11));
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return 12.0 * static_cast<double>(iterations) * (sizeof(V) / sizeof(float)) / s;
}
typedef float v16f __attribute__((vector_size(64)));
typedef float v8f __attribute__((vector_size(32)));
__attribute__((target("avx512f,fma"), noinline)) double fma_rate_avx512() {
    return fma_rate<v16f>(v16f{} + 0.999999f, v16f{} + 1e-7f);
}
__attribute__((target("avx2,fma"), noinline)) double fma_rate_avx2() {
    return fma_rate<v8f>(v8f{} + 0.999999f, v8f{} + 1e-7f);
}
#endif

std::pair<double, const char*> peak_fma_rate() {
#if defined(__x86_64__) && !defined(__clang__)
    if (avx512_search_available()) return {fma_rate_avx512(), "avx512"};
    if (avx2_search_available()) return {fma_rate_avx2(), "avx2"};
#endif
    return {std::nan(""), "none"};
}

TEST(ConvertSpeed, DISABLED_SecondsPerExpert) {
    uint32_t inter = 1024, hidden = 2304, experts = 3;
    if (const char* env = std::getenv("WASTE_CONVERT_BENCH")) std::sscanf(env, "%u %u %u", &inter, &hidden, &experts);
    const waste::format::ExpertQuant quant = waste::format::standard_expert_quant("VQ3R");
    const std::vector<float> gate = random_values(static_cast<size_t>(inter) * hidden, 1, 0.02f);
    const std::vector<float> down = random_values(static_cast<size_t>(hidden) * inter, 2, 0.02f);
    waste::platform::ThreadPool fit_pool(2);
    const uint32_t sample_rows = std::min<uint32_t>(inter, 65536 * 8 / hidden);
    std::vector<float> sample(static_cast<size_t>(sample_rows) * hidden);
    for (uint32_t r = 0; r < sample_rows; ++r) normalise_row(&gate[static_cast<size_t>(r) * hidden], hidden, &sample[static_cast<size_t>(r) * hidden]);
    const auto fit_start = std::chrono::steady_clock::now();
    const StageBooks books = fit_residual_books(sample, 3, 256, KmeansOptions{}, fit_pool);
    std::printf("{\"bench\": \"codebook_fit\", \"vectors\": %zu, \"stages\": 3, \"seconds\": %.3f}\n", sample.size() / 8,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - fit_start).count());
    const size_t index_bytes = (static_cast<size_t>(std::max(inter, hidden)) + 63) / 64 * 64 * std::max(inter, hidden) / 8 * 3;
    std::vector<uint16_t> scales(std::max(inter, hidden));
    const double weights = 3.0 * inter * hidden;
    // The search kernels alone, one thread, on the stage-1 book and normalised rows of another matrix.
    {
        const uint32_t rows = std::min<uint32_t>(hidden, 200000 * 8 / inter);
        std::vector<float> x(static_cast<size_t>(rows) * inter);
        for (uint32_t r = 0; r < rows; ++r) normalise_row(&down[static_cast<size_t>(r) * inter], inter, &x[static_cast<size_t>(r) * inter]);
        const size_t n = x.size() / 8;
        std::vector<uint8_t> labels(n), reference(n);
        for (SearchPath path : {SearchPath::scalar, SearchPath::avx2, SearchPath::avx2_screened, SearchPath::avx512,
                                SearchPath::avx512_screened}) {
            if (!search_path_available(path)) continue;
            const size_t count = path == SearchPath::scalar ? std::min<size_t>(n, 20000) : n;
            SearchStats stats;
            const double cpu0 = cpu_seconds();
            const auto start = std::chrono::steady_clock::now();
            nearest_centroids(books.search[0], x.data(), count, labels.data(), path, &stats);
            const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            const double cpu = cpu_seconds() - cpu0;
            if (path == SearchPath::scalar) reference.assign(labels.begin(), labels.begin() + static_cast<ptrdiff_t>(count));
            const bool same = std::equal(reference.begin(), reference.end(), labels.begin());
            std::printf("{\"bench\": \"nearest_centroid\", \"path\": \"%s\", \"vectors\": %zu, \"ns_per_vector\": %.1f, "
                        "\"cpu_ns_per_vector\": %.1f, \"exact_evaluations_per_vector\": %.2f, "
                        "\"same_as_scalar\": %s}\n",
                        search_path_name(path), count, s / static_cast<double>(count) * 1e9,
                        cpu / static_cast<double>(count) * 1e9,
                        static_cast<double>(stats.exact_evaluations) / static_cast<double>(count), same ? "true" : "false");
        }
    }
    // Distance evaluations of an exhaustive search: every 8-vector against every
    // centroid of every stage, 8 FMAs each, at the f32 FMA rate this core
    // sustains on its widest registers (measured here: 12 independent chains).
    const double fmas = weights / 8 * 3 * 256 * 8;
    const auto [peak_fma_per_s_per_core, peak_isa] = peak_fma_rate();
    std::printf("{\"bench\": \"exhaustive_flop_bound\", \"weights_per_expert\": %.0f, \"gflop\": %.1f, "
                "\"peak_gfma_per_s_per_core\": %.1f, \"peak_isa\": \"%s\", "
                "\"seconds_per_expert_1_thread\": %.3f, \"seconds_per_expert_2_threads\": %.3f}\n",
                weights, 2 * fmas / 1e9, peak_fma_per_s_per_core / 1e9, peak_isa, fmas / peak_fma_per_s_per_core,
                fmas / peak_fma_per_s_per_core / 2);
    std::vector<SearchPath> paths;
    // WASTE_CONVERT_BENCH_PATHS="avx512,avx2" limits the encoder runs to those paths.
    const char* only = std::getenv("WASTE_CONVERT_BENCH_PATHS");
    std::vector<SearchPath> candidates = {SearchPath::avx2, SearchPath::avx2_screened, SearchPath::avx512,
                                          SearchPath::avx512_screened};
    if (only) {
        candidates.clear();
        std::stringstream list(only);
        for (std::string name; std::getline(list, name, ',');)
            for (SearchPath path : {SearchPath::scalar, SearchPath::avx2, SearchPath::avx2_screened, SearchPath::avx512,
                                    SearchPath::avx512_screened})
                if (name == search_path_name(path)) candidates.push_back(path);
    }
    for (SearchPath path : candidates)
        if (search_path_available(path)) paths.push_back(path);
    if (paths.empty()) paths = {SearchPath::scalar};
    // The baseline every run's indices are compared with: one expert encoded
    // by the scalar exhaustive search (the loop VqSearchPath holds every path
    // to), 2 jobs (thread counts give the same bytes). Every expert of a run
    // encodes the same matrices, so its buffer ends as one expert's indices.
    // Slow on purpose (the scalar search is 30-60x the SIMD paths' time, see
    // the nearest_centroid lines: tens of seconds at the default shape,
    // minutes at K3's): it is the independent answer, not the first path's.
    std::vector<uint8_t> scalar_indices(index_bytes * 3, static_cast<uint8_t>(0xA5));
    {
        waste::platform::ThreadPool pool(2);
        const auto start = std::chrono::steady_clock::now();
        for (int k = 0; k < 3; ++k) {
            const bool is_down = k == 2;
            encode_matrix(is_down ? down.data() : gate.data(), is_down ? hidden : inter, is_down ? inter : hidden, books,
                          quant, scalar_indices.data() + static_cast<size_t>(k) * index_bytes, scales.data(), pool,
                          "bench", SearchPath::scalar);
        }
        std::printf("{\"bench\": \"convert_encode_baseline\", \"path\": \"scalar\", \"jobs\": 2, \"seconds_per_expert\": %.3f}\n",
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    // One index buffer for every run, touched before the first: the converter
    // reuses its record buffer, and a fresh 14 MB allocation per run would add
    // its page faults (~0.03-0.07 s per expert here) to the encoder's time.
    std::vector<uint8_t> indices(index_bytes * 3, 1);
    for (unsigned jobs : {1u, 2u})
        for (SearchPath path : paths) {
            waste::platform::ThreadPool pool(jobs);
            std::fill(indices.begin(), indices.end(), static_cast<uint8_t>(0xA5));  // nothing left from the run before
            const double cpu0 = cpu_seconds();
            const auto start = std::chrono::steady_clock::now();
            double error2 = 0, weight2 = 0;
            for (uint32_t e = 0; e < experts; ++e)
                for (int k = 0; k < 3; ++k) {
                    const bool is_down = k == 2;
                    const MatrixError err = encode_matrix(is_down ? down.data() : gate.data(), is_down ? hidden : inter,
                                                          is_down ? inter : hidden, books, quant,
                                                          indices.data() + static_cast<size_t>(k) * index_bytes,
                                                          scales.data(), pool, "bench", path);
                    error2 += err.error2;
                    weight2 += err.weight2;
                }
            const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / experts;
            const double cpu = (cpu_seconds() - cpu0) / experts;
            std::printf("{\"bench\": \"convert_encode\", \"rows\": %u, \"cols\": %u, \"weights_per_expert\": %.0f, \"jobs\": %u, "
                        "\"path\": \"%s\", \"seconds_per_expert\": %.4f, \"cpu_seconds_per_expert\": %.4f, "
                        "\"relative_error\": %.6f, \"indices_same_as_scalar\": %s}\n",
                        inter, hidden, weights, jobs, search_path_name(path), seconds, cpu, std::sqrt(error2 / weight2),
                        indices == scalar_indices ? "true" : "false");
            EXPECT_EQ(indices, scalar_indices) << search_path_name(path) << " with " << jobs
                                               << " jobs: indices differ from the scalar exhaustive search's";
        }
}

}  // namespace
