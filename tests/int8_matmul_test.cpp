// int8_matmul_test.cpp — the int8 mode's prefill expert products
// (kernels/int8_matmul.h) and trunk products (kernels/trunk_int8.h) against
// their scalar references and against the exact products.
//
// Tolerances:
// * every ISA variant (and every split of the rows, as threads make) gives
//   the scalar reference's bits: the decoded rows, the quantised
//   activations and the products (the dots are exact integers and the f32
//   steps are the reference's, lane by lane);
// * against the exact product (vq_matmul's scalar reference on the same VQ
//   rows), the rounding bound of the two int8 roundings, per (token, row):
//     |y - y_exact| <= scale · (e · max|w| · Σ|x| + e · Σ_g max_g|x| · Σ_g|w|
//                     + cols · e² · max|w| · max|x|) + 1e-5 · scale · Σ|w·x|
//   with e = 0.5 / 127 (half a step of each int8 grid, relative to its
//   maximum) and the last term the f32 sums' own rounding. A wrong weight,
//   a dropped group or a wrong scale breaks it by orders of magnitude (the
//   test also checks the bound is not vacuous: the error is nonzero and
//   below a tenth of Σ|w·x|).
//
// The trunk products (Q8G and Q4G weights as stored, int8 activations per
// weight group): every ISA, split and pool gives the scalar reference's bits
// (quantised inputs included); against the exact f32 trunk product
// (trunk_matmul.h), per (token, row),
//     |y - y_exact| <= Σ_g |ws_g| · 0.501 · xs_g · Σ_{c in g} |q_c| + 1e-5 · Σ|w·x|
// (half a step of the activation grid, 0.001 of it for the f32 reciprocal
// used in rounding, and the f32 sums' own rounding); nonzero, and over all
// cases below 1% of Σ|w·x|.
//
// KernelSpeed.DISABLED_Int8Matmul is a micro-benchmark, not a test:
//   ./int8_matmul_test --gtest_also_run_disabled_tests --gtest_filter='KernelSpeed.*'
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

#include "format/f16.h"
#include "format/manifest.h"
#include "format/trunk_codec.h"
#include "kernels/int8_matmul.h"
#include "kernels/trunk_int8.h"
#include "kernels/trunk_matmul.h"
#include "platform/thread_pool.h"
#include "trunk_tensors.h"
#include "kernels/vq_matmul.h"

namespace waste::kernels {
namespace {

std::vector<Isa> native_isas() {
    std::vector<Isa> isas{Isa::scalar};
    for (Isa isa : {Isa::avx2, Isa::avx512, Isa::neon})
        if (isa_runs(isa)) isas.push_back(isa);
    return isas;
}

struct AlignedBytes {
    explicit AlignedBytes(size_t n) : storage(n + 64) {}
    uint8_t* data() { return reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(storage.data()) + 63) & ~uintptr_t{63}); }
    std::vector<uint8_t> storage;
};

// One VQ matrix with random indices, books and f16 row scales.
struct VqMatrix {
    VqTableShape shape;
    bool packed6 = false;
    size_t rows = 0;
    std::vector<uint8_t> indices, scales;
    std::vector<float> books;
    size_t cols() const { return static_cast<size_t>(shape.positions) * shape.vec_dim; }
};

VqMatrix random_matrix(size_t rows, int positions, int stages, int entries, bool packed6, std::mt19937& rng) {
    VqMatrix m;
    m.shape = {positions, stages, entries, 8};
    m.packed6 = packed6;
    m.rows = rows;
    const size_t bytes = packed6 ? 3 : stages;
    m.indices.resize((rows + 63) / 64 * 64 * positions * bytes);
    std::uniform_int_distribution<int> byte(0, 255), entry(0, entries - 1);
    if (packed6) {
        for (size_t i = 0; i < m.indices.size(); i += 3) {
            unsigned word = 0;
            for (int s = 0; s < 4; ++s) word |= static_cast<unsigned>(entry(rng)) << (6 * s);
            m.indices[i] = word & 255, m.indices[i + 1] = (word >> 8) & 255, m.indices[i + 2] = word >> 16;
        }
    } else {
        for (uint8_t& b : m.indices) b = static_cast<uint8_t>(entry(rng));
    }
    std::normal_distribution<float> normal(0.0f, 1.0f);
    m.books.resize(static_cast<size_t>(stages) * entries * 8);
    for (size_t s = 0; s < static_cast<size_t>(stages); ++s)  // residual stages shrink, as trained ones do
        for (size_t i = 0; i < static_cast<size_t>(entries) * 8; ++i)
            m.books[s * entries * 8 + i] = normal(rng) / static_cast<float>(1 << (2 * s));
    std::uniform_real_distribution<float> scale(0.01f, 0.1f);
    for (size_t r = 0; r < rows; ++r) {
        const uint16_t bits = format::f32_to_f16(scale(rng));
        m.scales.push_back(bits & 255);
        m.scales.push_back(bits >> 8);
    }
    return m;
}

std::vector<float> random_tokens(size_t tokens, size_t cols, std::mt19937& rng) {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(tokens * cols);
    for (float& v : x) v = normal(rng);
    if (!x.empty()) x[cols / 3] = 40.0f;  // an outlier column, as real activations have
    return x;
}

struct Decoded {
    explicit Decoded(const VqMatrix& vq) : bytes(int8_matrix_bytes(vq.rows, vq.cols())) {
        m = int8_matrix_view(bytes.data(), vq.rows, vq.cols());
    }
    AlignedBytes bytes;
    Int8Matrix m;
};

struct Activations {
    Activations(size_t tokens, size_t cols) : ld((cols + 63) / 64 * 64), q(tokens * ld), s(tokens * ((cols + 255) / 256)) {}
    size_t ld;
    AlignedBytes q;
    std::vector<float> s;
    int8_t* data() { return reinterpret_cast<int8_t*>(q.data()); }
};

struct Shape {
    size_t rows;
    int positions, stages, entries;
    bool packed6;
    size_t tokens;
};

const Shape shapes[] = {
    {70, 9, 3, 256, false, 7},     // 72 columns: one partial group, rows past a 64-row block
    {128, 40, 3, 256, false, 8},   // 320 columns: a whole group and a partial one
    {64, 64, 2, 256, false, 5},    // 512 columns: VQ2R
    {33, 33, 4, 64, true, 3},      // VQ4P's packed indices
    {130, 128, 3, 256, false, 13}, // the mid shape's gate width
};

TEST(Int8Matmul, EveryIsaAndEverySplitGivesTheScalarBits) {
    for (const Shape& shape : shapes) {
        std::mt19937 rng(static_cast<unsigned>(shape.rows * 131 + shape.positions));
        const VqMatrix vq = random_matrix(shape.rows, shape.positions, shape.stages, shape.entries, shape.packed6, rng);
        const size_t cols = vq.cols();
        const std::vector<float> x = random_tokens(shape.tokens, cols, rng);
        Decoded reference(vq);
        decode_vq_int8_rows(Isa::scalar, vq.shape, vq.packed6, vq.indices.data(), vq.scales.data(), vq.books.data(),
                            reference.m, 0, vq.rows);
        Activations xr(shape.tokens, cols);
        quantize_int8_activations(Isa::scalar, x.data(), cols, shape.tokens, cols, xr.data(), xr.ld, xr.s.data());
        std::vector<float> y_ref(shape.tokens * vq.rows);
        int8_matmul_rows(Isa::scalar, reference.m, xr.data(), xr.ld, xr.s.data(), shape.tokens, y_ref.data(), vq.rows, 0,
                         vq.rows);
        for (Isa isa : native_isas()) {
            SCOPED_TRACE(std::string(isa_name(isa)) + " rows " + std::to_string(shape.rows) + " cols " + std::to_string(cols));
            Decoded decoded(vq);
            // decoded in two ranges split mid-tile, as two threads would
            const size_t split = vq.rows / 2 + 1;
            decode_vq_int8_rows(isa, vq.shape, vq.packed6, vq.indices.data(), vq.scales.data(), vq.books.data(), decoded.m, 0,
                                split);
            decode_vq_int8_rows(isa, vq.shape, vq.packed6, vq.indices.data(), vq.scales.data(), vq.books.data(), decoded.m,
                                split, vq.rows);
            EXPECT_EQ(0, std::memcmp(reference.bytes.data(), decoded.bytes.data(), int8_matrix_bytes(vq.rows, cols)));
            Activations xa(shape.tokens, cols);
            quantize_int8_activations(isa, x.data(), cols, shape.tokens, cols, xa.data(), xa.ld, xa.s.data());
            EXPECT_EQ(0, std::memcmp(xr.q.data(), xa.q.data(), shape.tokens * xa.ld));
            EXPECT_EQ(xr.s, xa.s);
            for (size_t first_end : {vq.rows, size_t{1}, size_t{6}, vq.rows - 3}) {
                std::vector<float> y(shape.tokens * vq.rows, -1.0f);
                int8_matmul_rows(isa, decoded.m, xa.data(), xa.ld, xa.s.data(), shape.tokens, y.data(), vq.rows, 0, first_end);
                int8_matmul_rows(isa, decoded.m, xa.data(), xa.ld, xa.s.data(), shape.tokens, y.data(), vq.rows, first_end,
                                 vq.rows);
                EXPECT_EQ(0, std::memcmp(y_ref.data(), y.data(), y.size() * sizeof(float))) << "split at " << first_end;
            }
        }
    }
}

TEST(Int8Matmul, StaysWithinTheRoundingBoundOfTheExactProduct) {
    const double e = 0.5 / 127;
    for (const Shape& shape : shapes) {
        std::mt19937 rng(static_cast<unsigned>(shape.rows * 7 + shape.positions));
        const VqMatrix vq = random_matrix(shape.rows, shape.positions, shape.stages, shape.entries, shape.packed6, rng);
        const size_t cols = vq.cols(), groups = (cols + 255) / 256;
        const std::vector<float> x = random_tokens(shape.tokens, cols, rng);
        // the exact weights, unscaled: Σ_s C_s[index] per column, as container-v0 §5 defines them
        std::vector<float> w(vq.rows * cols);
        const size_t bytes = vq.packed6 ? 3 : vq.shape.stages;
        for (size_t r = 0; r < vq.rows; ++r)
            for (int v = 0; v < vq.shape.positions; ++v) {
                const uint8_t* p = vq.indices.data() + ((r / 64 * vq.shape.positions + v) * 64 + r % 64) * bytes;
                const unsigned word = vq.packed6 ? p[0] | unsigned(p[1]) << 8 | unsigned(p[2]) << 16 : 0;
                for (int j = 0; j < 8; ++j) {
                    float sum = 0;
                    for (int s = 0; s < vq.shape.stages; ++s) {
                        const unsigned index = vq.packed6 ? (word >> (6 * s)) & 63u : p[s];
                        sum += vq.books[(size_t(s) * vq.shape.entries + index) * 8 + j];
                    }
                    w[r * cols + v * 8 + j] = sum;
                }
            }
        std::vector<float> exact(shape.tokens * vq.rows), y(shape.tokens * vq.rows);
        vq_matmul_rows(Isa::scalar, vq.shape, vq.packed6, vq.indices.data(), vq.scales.data(), vq.books.data(), x.data(), cols,
                       shape.tokens, exact.data(), vq.rows, 0, vq.rows);
        Decoded decoded(vq);
        decode_vq_int8_rows(active_isa(), vq.shape, vq.packed6, vq.indices.data(), vq.scales.data(), vq.books.data(),
                            decoded.m, 0, vq.rows);
        Activations xa(shape.tokens, cols);
        quantize_int8_activations(active_isa(), x.data(), cols, shape.tokens, cols, xa.data(), xa.ld, xa.s.data());
        int8_matmul_rows(active_isa(), decoded.m, xa.data(), xa.ld, xa.s.data(), shape.tokens, y.data(), vq.rows, 0, vq.rows);
        double worst = 0, largest_error = 0;
        for (size_t r = 0; r < vq.rows; ++r) {
            uint16_t bits;
            std::memcpy(&bits, vq.scales.data() + 2 * r, 2);
            const double scale = format::f16_to_f32(bits);
            double w_max = 0;
            for (size_t c = 0; c < cols; ++c) w_max = std::max(w_max, std::fabs(double(w[r * cols + c])));
            for (size_t t = 0; t < shape.tokens; ++t) {
                const float* xt = x.data() + t * cols;
                double x_sum = 0, x_max = 0, abs_products = 0, group_term = 0;
                for (size_t g = 0; g < groups; ++g) {
                    double g_max = 0, g_w = 0;
                    for (size_t c = g * 256; c < std::min(cols, (g + 1) * 256); ++c) {
                        g_max = std::max(g_max, std::fabs(double(xt[c])));
                        g_w += std::fabs(double(w[r * cols + c]));
                        x_sum += std::fabs(double(xt[c]));
                        abs_products += std::fabs(double(w[r * cols + c]) * xt[c]);
                    }
                    group_term += g_max * g_w;
                    x_max = std::max(x_max, g_max);
                }
                const double bound = scale * (e * w_max * x_sum + e * group_term + cols * e * e * w_max * x_max) +
                                     1e-5 * scale * abs_products;
                const double error = std::fabs(double(y[t * vq.rows + r]) - exact[t * vq.rows + r]);
                ASSERT_LE(error, bound) << "row " << r << " token " << t << " cols " << cols;
                ASSERT_LE(error, 0.1 * scale * abs_products) << "row " << r << " token " << t;
                worst = std::max(worst, error / bound);
                largest_error = std::max(largest_error, error);
            }
        }
        EXPECT_GT(largest_error, 0.0) << "the int8 path rounded nothing: not the int8 path";
        std::printf("int8 matmul cols %zu: worst error %.3f of the bound\n", cols, worst);
    }
}

TEST(Int8Matmul, AllZeroRowsAndTokensGiveZeros) {
    std::mt19937 rng(9);
    VqMatrix vq = random_matrix(8, 16, 3, 256, false, rng);
    std::fill(vq.books.begin(), vq.books.end(), 0.0f);
    Decoded decoded(vq);
    decode_vq_int8_rows(active_isa(), vq.shape, vq.packed6, vq.indices.data(), vq.scales.data(), vq.books.data(), decoded.m, 0,
                        vq.rows);
    std::vector<float> x(2 * vq.cols(), 0.0f);
    x[5] = 1.0f;  // token 0 nonzero, token 1 all zeros
    Activations xa(2, vq.cols());
    quantize_int8_activations(active_isa(), x.data(), vq.cols(), 2, vq.cols(), xa.data(), xa.ld, xa.s.data());
    EXPECT_EQ(xa.s[1], 0.0f);
    std::vector<float> y(2 * vq.rows, 1.0f);
    int8_matmul_rows(active_isa(), decoded.m, xa.data(), xa.ld, xa.s.data(), 2, y.data(), vq.rows, 0, vq.rows);
    for (float v : y) EXPECT_EQ(v, 0.0f);
}

using waste_test::make_trunk;
using waste_test::Trunk;

struct TrunkCase {
    format::TrunkFormat fmt;
    uint32_t group;
    size_t rows, cols, tokens;
};

// Shapes with a partial last group, rows of fewer groups than 16 that do or
// do not divide it, and rows of more (2112 columns: 9 to 33 groups).
std::vector<TrunkCase> trunk_cases() {
    std::vector<TrunkCase> cases;
    for (format::TrunkFormat fmt : {format::TrunkFormat::q8g, format::TrunkFormat::q4g})
        for (uint32_t group : {64u, 128u, 256u})
            for (auto [rows, cols] : {std::pair<size_t, size_t>{37, 72}, {64, 320}, {21, 1024}, {8, 200}, {3, 128}, {6, 2112}})
                for (size_t tokens : {size_t{1}, size_t{3}, size_t{4}, size_t{9}}) cases.push_back({fmt, group, rows, cols, tokens});
    return cases;
}

std::string describe(const TrunkCase& c) {
    return std::string(format::trunk_format_name(c.fmt)) + " group " + std::to_string(c.group) + " " + std::to_string(c.rows) +
           "x" + std::to_string(c.cols) + " tokens " + std::to_string(c.tokens);
}

// A case's tensor and tokens, and their quantisation by an ISA.
struct TrunkRun {
    TrunkRun(const TrunkCase& c, std::mt19937& rng)
        : tokens(c.tokens), trunk(make_trunk(c.fmt, c.group, c.rows, c.cols, rng)), x(random_tokens(c.tokens, c.cols, rng)) {}
    TrunkInt8Input quantized(Isa isa) const {
        TrunkInt8Input in;
        in.reserve(tokens, trunk.info.cols);
        quantize_trunk_input(isa, trunk.info, x.data(), trunk.info.cols, tokens, in);
        return in;
    }
    size_t tokens;
    Trunk trunk;
    std::vector<float> x;
};

TEST(TrunkInt8, TakesQ8GAndQ4GWithGroupsOfWhole64Columns) {
    format::TrunkTensor t;
    t.group = 128;
    for (auto [fmt, eligible] : {std::pair{format::TrunkFormat::q8g, true}, {format::TrunkFormat::q4g, true},
                                 {format::TrunkFormat::q3g, false}, {format::TrunkFormat::f32, false}}) {
        t.fmt = fmt;
        EXPECT_EQ(trunk_int8_eligible(t), eligible) << format::trunk_format_name(fmt);
    }
    t.fmt = format::TrunkFormat::q4g;
    for (auto [group, eligible] : {std::pair{64u, true}, {4096u, true}, {96u, false}, {32u, false}, {8192u, false}}) {
        t.group = group;
        EXPECT_EQ(trunk_int8_eligible(t), eligible) << "group " << group;
    }
}

TEST(TrunkInt8, EveryIsaSplitAndPoolGivesTheScalarBits) {
    std::mt19937 rng(21);
    platform::ThreadPool pool(3);
    for (const TrunkCase& c : trunk_cases()) {
        const TrunkRun run(c, rng);
        const format::LoadedTensor w = run.trunk.tensor();
        const std::vector<float>& x = run.x;
        const TrunkInt8Input reference = run.quantized(Isa::scalar);
        std::vector<float> expected(c.tokens * c.rows);
        trunk_int8_rows(Isa::scalar, w, reference, expected.data(), c.rows, 0, c.rows);
        for (Isa isa : native_isas()) {
            const TrunkInt8Input in = run.quantized(isa);
            ASSERT_EQ(0, std::memcmp(in.q.data(), reference.q.data(), c.tokens * reference.ld)) << describe(c) << " " << isa_name(isa);
            ASSERT_EQ(in.scale, reference.scale) << describe(c);
            ASSERT_EQ(in.sum, reference.sum) << describe(c);
            std::vector<float> whole(expected.size()), split(expected.size());
            trunk_int8_rows(isa, w, in, whole.data(), c.rows, 0, c.rows);
            const size_t cut = std::min<size_t>(13, c.rows);  // not a tile boundary
            trunk_int8_rows(isa, w, in, split.data(), c.rows, 0, cut);
            trunk_int8_rows(isa, w, in, split.data(), c.rows, cut, c.rows);
            ASSERT_EQ(0, std::memcmp(whole.data(), expected.data(), sizeof(float) * expected.size())) << describe(c) << " " << isa_name(isa);
            ASSERT_EQ(0, std::memcmp(split.data(), expected.data(), sizeof(float) * expected.size())) << describe(c) << " " << isa_name(isa);
        }
        std::vector<float> pooled(expected.size());
        TrunkInt8Input in;
        in.reserve(c.tokens, c.cols);
        trunk_int8_matmul(pool, w, x.data(), c.cols, c.tokens, pooled.data(), c.rows, in);
        ASSERT_EQ(0, std::memcmp(pooled.data(), expected.data(), sizeof(float) * expected.size())) << describe(c) << " pool";
    }
}

TEST(TrunkInt8, Q4GsOrderHoldsTheSameQuantisedInputs) {
    std::mt19937 rng(23);
    const size_t cols = 320, tokens = 2;
    const std::vector<float> x = random_tokens(tokens, cols, rng);
    // groups of whole 128s take 128-column spans, others 64
    for (auto [group, span] : {std::pair<uint32_t, size_t>{64, 64}, {128, 128}, {192, 64}, {256, 128}}) {
        const Trunk q8 = make_trunk(format::TrunkFormat::q8g, group, 4, cols, rng);
        const Trunk q4 = make_trunk(format::TrunkFormat::q4g, group, 4, cols, rng);
        TrunkInt8Input natural, nibbles;
        natural.reserve(tokens, cols);
        nibbles.reserve(tokens, cols);
        quantize_trunk_input(active_isa(), q8.info, x.data(), cols, tokens, natural);
        quantize_trunk_input(active_isa(), q4.info, x.data(), cols, tokens, nibbles);
        EXPECT_EQ(natural.nibble_span, 0u);
        EXPECT_EQ(nibbles.nibble_span, span) << "group " << group;
        EXPECT_EQ(natural.scale, nibbles.scale);
        EXPECT_EQ(natural.sum, nibbles.sum);
        for (size_t t = 0; t < tokens; ++t)
            for (size_t c = 0; c < cols; ++c) {
                // a span's even columns, then its odd ones
                const size_t base = c / span * span, k = c % span, at = base + (k % 2 == 0 ? k / 2 : span / 2 + k / 2);
                ASSERT_EQ(natural.q[t * natural.ld + c], nibbles.q[t * nibbles.ld + at]) << "group " << group << " token " << t << " column " << c;
                // and the quantised value is x's to within half a step
                const float step = natural.scale[t * natural.groups + c / group];
                ASSERT_LE(std::fabs(natural.q[t * natural.ld + c] * step - x[t * cols + c]), 0.501f * step);
            }
    }
}

TEST(TrunkInt8, StaysWithinTheRoundingBoundOfTheExactProduct) {
    std::mt19937 rng(25);
    double worst = 0, largest_error = 0, total_error = 0, total_products = 0;
    for (const TrunkCase& c : trunk_cases()) {
        const TrunkRun run(c, rng);
        const Trunk& trunk = run.trunk;
        const format::LoadedTensor w = trunk.tensor();
        const std::vector<float>& x = run.x;
        const TrunkInt8Input in = run.quantized(active_isa());
        std::vector<float> y(c.tokens * c.rows), exact(c.tokens * c.rows);
        trunk_int8_rows(active_isa(), w, in, y.data(), c.rows, 0, c.rows);
        matmul_rows(Isa::scalar, w, x.data(), c.cols, c.tokens, exact.data(), c.rows, 0, c.rows);
        std::vector<float> row(c.cols);
        for (size_t r = 0; r < c.rows; ++r) {
            w.row(r, row);
            for (size_t t = 0; t < c.tokens; ++t) {
                double bound = 0, abs_products = 0;
                for (size_t g = 0; g < trunk.info.groups_per_row; ++g) {
                    double group_abs = 0;  // Σ |ws_g q_c| = Σ |w_c| over the group
                    for (size_t col = g * c.group; col < std::min<size_t>(c.cols, (g + 1) * c.group); ++col) {
                        group_abs += std::fabs(row[col]);
                        abs_products += std::fabs(double(row[col]) * x[t * c.cols + col]);
                    }
                    bound += group_abs * 0.501 * in.scale[t * in.groups + g];
                }
                bound += 1e-5 * abs_products;
                const double error = std::fabs(double(y[t * c.rows + r]) - exact[t * c.rows + r]);
                ASSERT_LE(error, bound) << describe(c) << " row " << r << " token " << t;
                if (bound > 0) worst = std::max(worst, error / bound);
                largest_error = std::max(largest_error, error);
                total_error += error;
                total_products += abs_products;
            }
        }
    }
    EXPECT_GT(largest_error, 0.0) << "the int8 path rounded nothing: not the int8 path";
    // The bound is not vacuous: over every case the error is a small share of
    // Σ|w·x| (one token's group with a 40x outlier can reach ~12% alone:
    // its other columns get a step of 40/127).
    EXPECT_LT(total_error, 0.01 * total_products);
    std::printf("trunk int8: worst error %.3f of the bound, %.2e of sum |w x| over all\n", worst, total_error / total_products);
}

TEST(TrunkInt8, AllZeroInputsGiveZeros) {
    std::mt19937 rng(27);
    const Trunk trunk = make_trunk(format::TrunkFormat::q4g, 128, 8, 256, rng);
    std::vector<float> x(2 * 256, 0.0f);
    x[5] = 1.0f;  // token 0: one nonzero in group 0; token 1 all zeros
    TrunkInt8Input in;
    in.reserve(2, 256);
    quantize_trunk_input(active_isa(), trunk.info, x.data(), 256, 2, in);
    EXPECT_EQ(in.scale[1], 0.0f);  // token 0, group 1
    EXPECT_EQ(in.scale[2], 0.0f);
    std::vector<float> y(2 * 8, 1.0f);
    trunk_int8_rows(active_isa(), trunk.tensor(), in, y.data(), 8, 0, 8);
    for (size_t r = 0; r < 8; ++r) EXPECT_EQ(y[8 + r], 0.0f);
}

double median_ns(const std::function<void()>& f, int reps) {
    std::vector<double> ns;
    for (int i = 0; i < reps; ++i) {
        const auto start = std::chrono::steady_clock::now();
        f();
        ns.push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count());
    }
    std::sort(ns.begin(), ns.end());
    return ns[ns.size() / 2];
}

// One mid expert's gate rows (512 × 1024, VQ3R) against `tokens` tokens: the
// exact f32 product, the int8 product from decoded rows, and the decoding.
TEST(KernelSpeed, DISABLED_Int8Matmul) {
    std::mt19937 rng(5);
    const VqMatrix vq = random_matrix(512, 128, 3, 256, false, rng);
    const size_t cols = vq.cols();
    Decoded decoded(vq);
    for (size_t tokens : {size_t{1}, size_t{8}, size_t{32}}) {
        const std::vector<float> x = random_tokens(tokens, cols, rng);
        std::vector<float> y(tokens * vq.rows);
        Activations xa(tokens, cols);
        for (Isa isa : native_isas()) {
            if (isa == Isa::scalar) continue;
            const double exact = median_ns([&] {
                vq_matmul_rows(isa, vq.shape, false, vq.indices.data(), vq.scales.data(), vq.books.data(), x.data(), cols, tokens,
                               y.data(), vq.rows, 0, vq.rows);
            }, 31);
            const double decode = median_ns([&] {
                decode_vq_int8_rows(isa, vq.shape, false, vq.indices.data(), vq.scales.data(), vq.books.data(), decoded.m, 0,
                                    vq.rows);
            }, 31);
            const double quantize = median_ns(
                [&] { quantize_int8_activations(isa, x.data(), cols, tokens, cols, xa.data(), xa.ld, xa.s.data()); }, 31);
            const double product = median_ns([&] {
                int8_matmul_rows(isa, decoded.m, xa.data(), xa.ld, xa.s.data(), tokens, y.data(), vq.rows, 0, vq.rows);
            }, 31);
            std::printf("KERNELSPEED int8_matmul shape=mid-gate tokens=%zu isa=%s vnni=%d exact_ns=%.0f decode_ns=%.0f "
                        "quantize_ns=%.0f product_ns=%.0f product_gmacs=%.2f cached_speedup=%.2f uncached_speedup=%.2f\n",
                        tokens, isa_name(isa), int8_vnni_path() ? 1 : 0, exact, decode, quantize, product,
                        static_cast<double>(tokens) * vq.rows * cols / product, exact / (quantize + product),
                        exact / (decode + quantize + product));
        }
    }
}

}  // namespace
}  // namespace waste::kernels
