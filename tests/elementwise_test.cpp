// elementwise_test.cpp — every ISA variant of rmsnorm, the GLU activations
// and the sigmoid gate (kernels/elementwise.h) against the scalar reference
// (kernels/math.h): this CPU's variants, called explicitly whatever WASTE_ISA
// says, and — when SIMDe's headers are installed — the NEON bodies over
// SIMDe's portable intrinsics.
//
// Tolerances (why: elementwise.h), in units of the reference's ulp, with
// 2^-126 (FLT_MIN) as the unit where the reference is subnormal or zero:
// * sigmoid ≤ 4 ulp and SiLU·b ≤ 8 ulp: the vectorised expm1 is within
//   2 ulp of the truth, 1/(2+e) adds a rounding, the reference's own
//   std::exp-based result is within ~1.5 ulp of the truth;
// * SiTU ≤ 16 ulp: two tanh and a sigmoid, each a few ulp;
// * rmsnorm ≤ 2 ulp: only Σx²'s order differs (f64), so the f32 scale is the
//   same float or its neighbour;
// * the sigmoid against f64 truth ≤ 3 ulp (the variants' own error, so a
//   fault shared with the reference's structure would still show).
// Infinities and NaN must match exactly (NaN with NaN). Hostile inputs:
// zeros of both signs, subnormals, the edges of exp's range (±87, ±88.7,
// ±89), huge and infinite values, NaN.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/elementwise.h"

#if !WASTE_NEON_SIMD && __has_include(<simde/arm/neon.h>)
#define WASTE_TEST_EMULATED_NEON 1
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/arm/neon.h>

namespace waste::kernels::neon_emu {
// The intrinsics the NEON bodies use that SIMDe 0.7 lacks, from Arm's
// definitions (IEEE division per lane).
inline float32x4_t vdivq_f32(float32x4_t a, float32x4_t b) {
    float x[4], y[4];
    vst1q_f32(x, a);
    vst1q_f32(y, b);
    for (int l = 0; l < 4; ++l) x[l] /= y[l];
    return vld1q_f32(x);
}
#include "kernels/elementwise_neon_v.inc"
#include "kernels/elementwise_simd.inc"
}  // namespace waste::kernels::neon_emu
#endif

namespace waste::kernels {
namespace {

struct Variant {
    std::string name;
    std::function<void(const float*, const float*, float, size_t, float*)> rmsnorm;
    std::function<void(const GluActivation&, float*, const float*, size_t)> glu;
    std::function<void(float*, const float*, size_t)> mul_sigmoid;
    std::function<float(const float*, const float*, size_t)> dot;
    std::function<void(float, const float*, float*, size_t)> axpy;
    std::function<void(const float*, const float*, size_t, size_t, size_t, float*)> dots;
    std::function<void(const float*, const float*, size_t, size_t, float*, size_t)> axpys;
};

std::vector<Variant> variants() {
    std::vector<Variant> out;
    for (Isa isa : {Isa::avx2, Isa::avx512, Isa::neon})
        if (isa_runs(isa))
            out.push_back({isa_name(isa),
                           [isa](const float* x, const float* w, float eps, size_t n, float* o) { rmsnorm(isa, x, w, eps, n, o); },
                           [isa](const GluActivation& a, float* g, const float* u, size_t n) { glu(isa, a, g, u, n); },
                           [isa](float* x, const float* g, size_t n) { mul_sigmoid(isa, x, g, n); },
                           [isa](const float* a, const float* b, size_t n) { return dot(isa, a, b, n); },
                           [isa](float a, const float* x, float* y, size_t n) { axpy(isa, a, x, y, n); },
                           [isa](const float* a, const float* b, size_t stride, size_t rows, size_t n, float* o) {
                               dots(isa, a, b, stride, rows, n, o);
                           },
                           [isa](const float* a, const float* x, size_t stride, size_t rows, float* y, size_t n) {
                               axpys(isa, a, x, stride, rows, y, n);
                           }});
#if defined(WASTE_TEST_EMULATED_NEON)
    out.push_back({"neon-emulated", neon_emu::rmsnorm_simd, neon_emu::glu_simd, neon_emu::mul_sigmoid_simd,
                   neon_emu::dot_simd, neon_emu::axpy_simd, neon_emu::dots_simd<>, neon_emu::axpys_simd});
#endif
    return out;
}

// |got − want| in units of want's ulp, or of FLT_MIN where want is subnormal
// or zero (f32 exp itself flushes there: e^−88.74 overflows); infinite when
// one is NaN/inf and the other is not the same.
double ulps(float want, float got) {
    if (std::isnan(want) || std::isnan(got)) return std::isnan(want) && std::isnan(got) ? 0 : INFINITY;
    if (std::isinf(want) || std::isinf(got)) return want == got ? 0 : INFINITY;
    const double unit = std::fabs(want) < FLT_MIN ? FLT_MIN : std::ldexp(1.0, std::ilogb(want) - 23);
    return std::fabs(static_cast<double>(got) - want) / unit;
}

std::vector<float> hostile_values() {
    std::vector<float> v = {0.0f, -0.0f, 1e-40f, -1e-40f, FLT_TRUE_MIN, -FLT_TRUE_MIN, FLT_MIN, -FLT_MIN, 1e-30f, -1e-30f,
                            1e-7f, -1e-7f, 0.5f, -0.5f, 0.3466f, -0.3466f, 1.0f, -1.0f, 4.0f, -4.0f, 9.0f, -9.0f,
                            17.0f, -17.0f, 20.0f, -20.0f, 25.0f, -25.0f, 80.0f, -80.0f, 87.0f, -87.0f, 87.5f, -87.5f,
                            88.0f, -88.0f, 88.5f, -88.5f, 88.72f, -88.72f, 88.8f, -88.8f, 89.0f, -89.0f, 100.0f,
                            -100.0f, 200.0f, -200.0f, 1e4f, -1e4f, 1e30f, -1e30f, FLT_MAX, -FLT_MAX, INFINITY, -INFINITY,
                            std::numeric_limits<float>::quiet_NaN()};
    return v;
}

// Inputs: the hostile list, then a sweep of exp's whole range, then normal
// values at several scales.
std::vector<float> inputs(std::mt19937& rng) {
    std::vector<float> v = hostile_values();
    for (float z = -110.0f; z <= 110.0f; z += 0.0371f) v.push_back(z);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (float scale : {0.01f, 0.1f, 1.0f, 3.0f, 10.0f, 40.0f})
        for (int i = 0; i < 2000; ++i) v.push_back(normal(rng) * scale);
    return v;
}

struct Worst {
    double ulps = 0;
    float at = 0;
    void see(double u, float x) {
        if (u > ulps) ulps = u, at = x;
    }
};

TEST(Elementwise, ReportsVariants) {
    std::string names;
    for (const Variant& v : variants()) names += " " + v.name;
    std::printf("best_isa=%s variants:%s\n", isa_name(best_isa()), names.empty() ? " (none)" : names.c_str());
}

TEST(Elementwise, SigmoidGateWithinTolerance) {
    std::mt19937 rng(1);
    const std::vector<float> z = inputs(rng);
    for (const Variant& v : variants()) {
        std::vector<float> got(z.size(), 1.0f);
        v.mul_sigmoid(got.data(), z.data(), z.size());
        Worst vs_ref, vs_truth;
        for (size_t i = 0; i < z.size(); ++i) {
            vs_ref.see(ulps(sigmoid(z[i]), got[i]), z[i]);
            if (!std::isnan(z[i]))
                vs_truth.see(ulps(static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(z[i])))), got[i]), z[i]);
        }
        std::printf("%s sigmoid: max %.2f ulp vs reference (z=%g), %.2f ulp vs f64 (z=%g)\n", v.name.c_str(), vs_ref.ulps,
                    vs_ref.at, vs_truth.ulps, vs_truth.at);
        EXPECT_LE(vs_ref.ulps, 4.0) << v.name << " at z=" << vs_ref.at;
        EXPECT_LE(vs_truth.ulps, 3.0) << v.name << " at z=" << vs_truth.at;
        // x·σ(g) with x ≠ 1: the same product as the reference's
        std::vector<float> x(z.size(), -3.5f), want(z.size(), -3.5f);
        v.mul_sigmoid(x.data(), z.data(), z.size());
        mul_sigmoid(Isa::scalar, want.data(), z.data(), z.size());
        for (size_t i = 0; i < z.size(); ++i) EXPECT_LE(ulps(want[i], x[i]), 4.0) << v.name << " z=" << z[i];
    }
}

void check_glu(const GluActivation& act, double tolerance, const char* label) {
    std::mt19937 rng(2);
    const std::vector<float> a = inputs(rng);
    std::vector<float> b = a;
    std::shuffle(b.begin(), b.end(), rng);
    // pair every hostile value with every other as well
    std::vector<float> ga = a, gb = b;
    for (float x : hostile_values())
        for (float y : hostile_values()) ga.push_back(x), gb.push_back(y);
    for (const Variant& v : variants()) {
        std::vector<float> got = ga, want = ga;
        v.glu(act, got.data(), gb.data(), ga.size());
        glu(Isa::scalar, act, want.data(), gb.data(), ga.size());
        Worst worst;
        size_t bad = 0;
        for (size_t i = 0; i < ga.size(); ++i) {
            const double u = ulps(want[i], got[i]);
            worst.see(u, ga[i]);
            if (u > tolerance && bad++ < 5)
                ADD_FAILURE() << v.name << " " << label << " a=" << ga[i] << " b=" << gb[i] << " want " << want[i] << " got "
                              << got[i] << " (" << u << " ulp)";
        }
        std::printf("%s %s: max %.2f ulp vs reference (a=%g)\n", v.name.c_str(), label, worst.ulps, worst.at);
    }
}

TEST(Elementwise, SiluGluWithinTolerance) { check_glu(GluActivation{}, 8.0, "silu"); }
TEST(Elementwise, SituGluWithinTolerance) { check_glu(GluActivation{true, 4.0f, 25.0f}, 16.0, "situ"); }
TEST(Elementwise, ClampedSwigluWithinTolerance) {  // gpt-oss: the clamps bind on most of the inputs' range
    GluActivation act;
    act.clamp_limit = 7.0f;
    act.alpha = 1.702f;
    check_glu(act, 8.0, "clamped swiglu");
}
TEST(Elementwise, SituNoLinearTanhWithinTolerance) { check_glu(GluActivation{true, 4.0f, 0.0f}, 16.0, "situ(lambda=0)"); }

TEST(Elementwise, RmsnormWithinTolerance) {
    std::mt19937 rng(3);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<size_t> sizes;
    for (size_t n = 1; n <= 70; ++n) sizes.push_back(n);
    for (size_t n : {127, 128, 129, 1024, 7168}) sizes.push_back(n);
    for (const Variant& v : variants()) {
        Worst worst;
        for (size_t n : sizes)
            for (int kind = 0; kind < 4; ++kind) {
                std::vector<float> x(n), w(n);
                for (size_t i = 0; i < n; ++i) {
                    x[i] = normal(rng) * (kind == 1 ? 1e-20f : kind == 2 ? 1e15f : 1.0f);
                    w[i] = normal(rng);
                }
                if (kind == 3)  // zeros and subnormals
                    for (size_t i = 0; i < n; ++i) x[i] = i % 3 == 0 ? 0.0f : i % 3 == 1 ? 1e-40f : -1e-39f;
                for (const float* wp : {static_cast<const float*>(nullptr), static_cast<const float*>(w.data())}) {
                    std::vector<float> want(n), got(n);
                    rmsnorm(x.data(), wp, 1e-6f, n, want.data());
                    v.rmsnorm(x.data(), wp, 1e-6f, n, got.data());
                    for (size_t i = 0; i < n; ++i) {
                        const double u = ulps(want[i], got[i]);
                        worst.see(u, static_cast<float>(n));
                        ASSERT_LE(u, 2.0) << v.name << " n=" << n << " kind=" << kind << " i=" << i;
                    }
                    // in place (out aliases x) gives the same bits
                    std::vector<float> in_place = x;
                    v.rmsnorm(in_place.data(), wp, 1e-6f, n, in_place.data());
                    ASSERT_EQ(0, std::memcmp(in_place.data(), got.data(), sizeof(float) * n)) << v.name << " n=" << n;
                }
            }
        std::printf("%s rmsnorm: max %.2f ulp vs reference (n=%g)\n", v.name.c_str(), worst.ulps, worst.at);
    }
}

#if defined(WASTE_TEST_EMULATED_NEON)
// expm1 and tanh themselves against f64 (through the NEON body, the only one
// this file can reach directly; the x86 ones differ only by fused
// multiply-adds): the error budget elementwise.h states.
TEST(Elementwise, Expm1AndTanhAgainstF64) {
    std::mt19937 rng(5);
    const std::vector<float> x = inputs(rng);
    Worst e, t;
    for (size_t i = 0; i < x.size(); i += 4) {
        float in[4] = {0, 0, 0, 0}, em[4], th[4];
        for (size_t l = 0; l < 4 && i + l < x.size(); ++l) in[l] = x[i + l];
        vst1q_f32(em, neon_emu::expm1v(vld1q_f32(in)));
        vst1q_f32(th, neon_emu::tanhv(vld1q_f32(in)));
        for (size_t l = 0; l < 4; ++l) {
            const double truth = std::expm1(static_cast<double>(in[l]));
            const float want = truth > FLT_MAX ? INFINITY : static_cast<float>(truth);
            e.see(ulps(want, em[l]), in[l]);
            t.see(ulps(static_cast<float>(std::tanh(static_cast<double>(in[l]))), th[l]), in[l]);
        }
    }
    std::printf("neon-emulated expm1: max %.2f ulp (x=%g); tanh: max %.2f ulp (x=%g)\n", e.ulps, e.at, t.ulps, t.at);
    EXPECT_LE(e.ulps, 3.0) << "x=" << e.at;
    EXPECT_LE(t.ulps, 4.0) << "x=" << t.at;
}
#endif

// An element's result depends only on its inputs, not on n or its position
// (tails run the same vector code): any split of an array — threads — gives
// the same bits.
TEST(Elementwise, PositionIndependent) {
    std::mt19937 rng(4);
    const std::vector<float> a = inputs(rng);
    const size_t n = 37;
    for (const Variant& v : variants())
        for (const GluActivation act : {GluActivation{}, GluActivation{true, 4.0f, 25.0f}}) {
            std::vector<float> whole(a.begin(), a.begin() + n);
            const std::vector<float> u(a.begin() + n, a.begin() + 2 * n);
            v.glu(act, whole.data(), u.data(), n);
            for (size_t i = 0; i < n; ++i) {
                float one = a[i];
                v.glu(act, &one, &u[i], 1);
                EXPECT_TRUE(std::memcmp(&one, &whole[i], 4) == 0) << v.name << " i=" << i;
            }
            for (size_t split = 1; split < n; split += 5) {
                std::vector<float> parts(a.begin(), a.begin() + n);
                v.glu(act, parts.data(), u.data(), split);
                v.glu(act, parts.data() + split, u.data() + split, n - split);
                EXPECT_EQ(0, std::memcmp(parts.data(), whole.data(), sizeof(float) * n)) << v.name << " split=" << split;
            }
        }
}

// dot: every variant within 2·γ_n·Σ|a·b| of the scalar reference (each
// order's rounding error is at most γ_n·Σ|a·b|), and within γ_n of an f64
// sum; lengths around the vector widths (tails), cancelling sums, and a
// NaN or an inf that must come through.
TEST(Elementwise, DotWithinTolerance) {
    std::mt19937 rng(17);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (size_t n : {size_t{0}, size_t{1}, size_t{3}, size_t{4}, size_t{7}, size_t{8}, size_t{15}, size_t{16}, size_t{17},
                     size_t{31}, size_t{32}, size_t{33}, size_t{64}, size_t{160}, size_t{513}}) {
        std::vector<float> a(n), b(n);
        for (size_t i = 0; i < n; ++i) {
            a[i] = normal(rng);
            b[i] = i % 2 ? a[i] * 1.0001f : -a[i];  // sums that nearly cancel
            if (i % 5 == 0) b[i] = normal(rng) * 1e3f;
        }
        double exact = 0, magnitude = 0;
        for (size_t i = 0; i < n; ++i) {
            exact += static_cast<double>(a[i]) * b[i];
            magnitude += std::fabs(static_cast<double>(a[i]) * b[i]);
        }
        const float ref = dot(Isa::scalar, a.data(), b.data(), n);
        // γ_n = n·u/(1 − n·u) ≤ 1.01·n·u for n·u < 0.01 (u = 2⁻²⁴)
        const double bound = 2.0 * 1.01 * static_cast<double>(n) * std::ldexp(1.0, -24) * magnitude;
        for (const Variant& v : variants()) {
            const float got = v.dot(a.data(), b.data(), n);
            EXPECT_LE(std::fabs(static_cast<double>(got) - ref), bound + 1e-30) << v.name << " n=" << n;
            EXPECT_LE(std::fabs(static_cast<double>(got) - exact), bound / 2 + 1e-30) << v.name << " n=" << n;
        }
    }
    std::vector<float> a(37, 1.0f), b(37, 2.0f);
    b[20] = NAN;
    for (const Variant& v : variants()) EXPECT_TRUE(std::isnan(v.dot(a.data(), b.data(), a.size()))) << v.name;
    b[20] = INFINITY;
    for (const Variant& v : variants()) EXPECT_EQ(v.dot(a.data(), b.data(), a.size()), INFINITY) << v.name;
}

// axpys: bit for bit the variant's own axpy of each row in turn (the sum
// stays in registers; its operations and their order do not change), over
// row counts and lengths around the vector widths, for the scalar
// reference too. Tolerance 0.
TEST(Elementwise, AxpysAreEachRowsAxpyInTurn) {
    std::mt19937 rng(29);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<Variant> all = variants();
    all.push_back({"scalar", {}, {}, {}, {}, [](float a, const float* x, float* y, size_t n) { axpy(Isa::scalar, a, x, y, n); },
                   {}, [](const float* a, const float* x, size_t stride, size_t rows, float* y, size_t n) {
                       axpys(Isa::scalar, a, x, stride, rows, y, n);
                   }});
    // lengths through the 8- and 4-vector passes (AVX-512: 128 = 8 vectors, 64 = 4, 160 = 8 + 2; AVX2 at twice as many)
    for (size_t n : {size_t{1}, size_t{7}, size_t{16}, size_t{33}, size_t{64}, size_t{128}, size_t{160}, size_t{200}})
        for (size_t rows : {size_t{0}, size_t{1}, size_t{5}, size_t{70}}) {
            const size_t stride = n + 5;
            std::vector<float> a(rows), x(rows * stride), y0(n);
            for (float& v : a) v = normal(rng);
            for (float& v : x) v = normal(rng);
            for (float& v : y0) v = normal(rng);
            for (const Variant& v : all) {
                std::vector<float> want = y0, got = y0;
                for (size_t r = 0; r < rows; ++r) v.axpy(a[r], x.data() + r * stride, want.data(), n);
                v.axpys(a.data(), x.data(), stride, rows, got.data(), n);
                EXPECT_EQ(got, want) << v.name << ", n " << n << ", rows " << rows;
            }
        }
}

// dots: every row's sum bit for bit the variant's own dot of that row (the
// rows interleave, their operations do not change), over row counts around
// the 4-row pass and the 16-row transposed pass (AVX-512) and lengths
// around the vector widths.
TEST(Elementwise, DotsAreEachRowsDot) {
    std::mt19937 rng(23);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (size_t n : {size_t{1}, size_t{15}, size_t{32}, size_t{33}, size_t{128}, size_t{160}})
        for (size_t rows : {size_t{0}, size_t{1}, size_t{3}, size_t{4}, size_t{9}, size_t{16}, size_t{17}, size_t{39}}) {
            const size_t stride = n + 3;
            std::vector<float> a(n), b(rows * stride + 1);
            for (float& v : a) v = normal(rng);
            for (float& v : b) v = normal(rng);
            for (const Variant& v : variants()) {
                std::vector<float> out(rows + 1, -7.0f);
                v.dots(a.data(), b.data(), stride, rows, n, out.data());
                for (size_t r = 0; r < rows; ++r) {
                    const float one = v.dot(a.data(), b.data() + r * stride, n);
                    EXPECT_EQ(0, std::memcmp(&out[r], &one, 4)) << v.name << " n=" << n << " row " << r;
                }
                EXPECT_EQ(out[rows], -7.0f) << v.name << " wrote past the rows";
            }
        }
}

// axpy: each element of every variant within u·(|got| + |ref| + |a·x|) of
// the reference's y + round(a·x) (u = 2⁻²⁴: the fused result and the
// reference are each within half an ulp of the exact y + a·x, the reference
// after one more rounding of a·x); lengths around the vector widths, only
// the first n elements written, a NaN carried through.
TEST(Elementwise, AxpyWithinTolerance) {
    std::mt19937 rng(19);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const double u = std::ldexp(1.0, -24);
    for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{15}, size_t{16}, size_t{17}, size_t{64}, size_t{130}}) {
        std::vector<float> x(n + 1), y(n + 1);
        for (size_t i = 0; i <= n; ++i) {
            x[i] = normal(rng);
            y[i] = i % 3 ? normal(rng) : -0.7f * x[i];  // sums that nearly cancel
        }
        const float a = 0.7f;
        std::vector<float> ref = y;
        axpy(Isa::scalar, a, x.data(), ref.data(), n);
        for (const Variant& v : variants()) {
            std::vector<float> got = y;
            v.axpy(a, x.data(), got.data(), n);
            for (size_t i = 0; i < n; ++i) {
                const double bound = u * (std::fabs(got[i]) + std::fabs(ref[i]) + std::fabs(static_cast<double>(a) * x[i]));
                EXPECT_LE(std::fabs(static_cast<double>(got[i]) - ref[i]), bound + 1e-38) << v.name << " n=" << n << " i=" << i;
            }
            EXPECT_EQ(got[n], y[n]) << v.name << " wrote past n=" << n;
        }
    }
    std::vector<float> x(37, 1.0f), y(37, 2.0f);
    x[20] = NAN;
    for (const Variant& v : variants()) {
        std::vector<float> got = y;
        v.axpy(3.0f, x.data(), got.data(), x.size());
        EXPECT_TRUE(std::isnan(got[20])) << v.name;
        EXPECT_EQ(got[19], 5.0f) << v.name;
    }
}

}  // namespace
}  // namespace waste::kernels
