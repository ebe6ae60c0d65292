// kda_step_test.cpp — every ISA variant of the KDA recurrence
// (kernels/kda_step.h) against the scalar reference: this CPU's variants,
// called explicitly whatever WASTE_ISA says, and — when SIMDe's headers are
// installed — the NEON body (src/kernels/kda_step_neon.inc) over SIMDe's
// portable intrinsics.
//
// Tolerance: none — bit-identical state and outputs. The variants do the
// reference's multiplies and adds per element in its order (columns in
// lanes, products never fused), so any difference is a fault. Shapes: head
// dimensions around the vector widths (1 … 130: masked and scalar tails,
// partial column blocks), runs of 1 … 7 tokens (the fused sweeps), strided
// inputs; hostile values: zeros, subnormals, huge values that overflow to
// inf and NaN.
//
// KdaStepSpeed.DISABLED_* is a micro-benchmark, not a test: run it with
//   ./kda_step_test --gtest_also_run_disabled_tests --gtest_filter='KdaStepSpeed.*'
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <chrono>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "kernels/kda_step.h"

#if !WASTE_NEON_SIMD && __has_include(<simde/arm/neon.h>)
#define WASTE_TEST_EMULATED_NEON 1
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/arm/neon.h>

namespace waste::kernels::neon_emu {
// SIMDe's vmulq/vaddq are plain f32 operations and the test is not compiled
// for FMA: no barrier needed.
#define WASTE_KEEP(v) ((void)0)
#include "kernels/kda_step_neon.inc"
#undef WASTE_KEEP
}  // namespace waste::kernels::neon_emu
#endif

namespace waste::kernels {
namespace {

using Run = std::function<void(float*, size_t, const KdaHeadRun&, float*)>;
struct Variant {
    std::string name;
    Run run;
};

std::vector<Variant> variants() {
    std::vector<Variant> out;
    for (Isa isa : {Isa::avx2, Isa::avx512, Isa::neon})
        if (isa != Isa::scalar && isa_runs(isa))
            out.push_back({isa_name(isa), [isa](float* s, size_t d, const KdaHeadRun& r, float* sc) { kda_head_run(isa, s, d, r, sc); }});
#if defined(WASTE_TEST_EMULATED_NEON)
    out.push_back({"neon-emulated", [](float* s, size_t d, const KdaHeadRun& r, float* sc) {
                       if (!neon_emu::kda_head_run(s, d, r, sc)) kda_head_run(Isa::scalar, s, d, r, sc);
                   }});
#endif
    return out;
}

// Same bits, or both NaN (a NaN's payload is not part of the contract).
bool same(float a, float b) {
    if (std::isnan(a) && std::isnan(b)) return true;
    uint32_t x, y;
    std::memcpy(&x, &a, 4);
    std::memcpy(&y, &b, 4);
    return x == y;
}

struct Case {
    size_t d, tokens, ld;
    std::vector<float> state, q, k, v, decay, beta, out;
    KdaHeadRun run(float* out_ptr) const {
        KdaHeadRun r;
        r.q = q.data();
        r.k = k.data();
        r.v = v.data();
        r.decay = decay.data();
        r.beta = beta.data();
        r.out = out_ptr;
        r.ld = ld;
        r.beta_stride = 3;
        r.tokens = tokens;
        return r;
    }
};

// Values as the layer feeds them: q, k l2-normalised-sized, decay in (0, 1],
// β in (0, 1); `hostile` mixes in zeros, subnormals and huge values.
Case make_case(size_t d, size_t tokens, std::mt19937& rng, bool hostile) {
    Case c{d, tokens, d + 5, {}, {}, {}, {}, {}, {}, {}};
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> unit(0.0f, 1.0f);
    const float specials[] = {0.0f, -0.0f, 1e-40f, -1e-40f, FLT_TRUE_MIN, FLT_MIN, 1e30f, -1e30f, 3e38f};
    auto pick = [&](float normal_value) {
        if (hostile && unit(rng) < 0.1f) return specials[rng() % std::size(specials)];
        return normal_value;
    };
    c.state.resize(d * d);
    for (float& s : c.state) s = pick(normal(rng));
    const size_t n = tokens * c.ld;
    for (auto* vec : {&c.q, &c.k, &c.v, &c.decay}) vec->resize(n);
    const float inv = 1.0f / std::sqrt(static_cast<float>(d));
    for (size_t i = 0; i < n; ++i) {
        c.q[i] = pick(normal(rng) * inv);
        c.k[i] = pick(normal(rng) * inv);
        c.v[i] = pick(normal(rng));
        c.decay[i] = hostile && unit(rng) < 0.1f ? specials[rng() % 6] : std::exp(-unit(rng));
    }
    c.beta.resize(tokens * 3);
    for (float& b : c.beta) b = unit(rng);
    c.out.assign(n, 0.0f);
    return c;
}

void expect_same(const std::vector<float>& want, const std::vector<float>& got, const std::string& what) {
    ASSERT_EQ(want.size(), got.size());
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < want.size(); ++i)
        if (!same(want[i], got[i]) && bad++ == 0) first = i;
    EXPECT_EQ(bad, 0u) << what << ": first at " << first << " want " << want[first] << " got " << got[first];
}

TEST(KdaStep, ReportsVariants) {
    std::string names;
    for (const Variant& v : variants()) names += " " + v.name;
    std::printf("best_isa=%s variants:%s\n", isa_name(best_isa()), names.empty() ? " (none)" : names.c_str());
}

TEST(KdaStep, VariantsMatchScalarBits) {
    std::mt19937 rng(7);
    for (bool hostile : {false, true})
        for (size_t d : {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 48, 63, 64, 65, 100, 128, 130})
            for (size_t tokens : {1, 2, 3, 7}) {
                const Case c = make_case(d, tokens, rng, hostile);
                std::vector<float> want_state = c.state, want_out = c.out, scratch(kda_scratch_floats(d));
                kda_head_run(Isa::scalar, want_state.data(), d, c.run(want_out.data()), scratch.data());
                for (const Variant& v : variants()) {
                    std::vector<float> state = c.state, out = c.out;
                    std::fill(scratch.begin(), scratch.end(), 12345.0f);  // scratch carries nothing in
                    v.run(state.data(), d, c.run(out.data()), scratch.data());
                    const std::string what = v.name + " d=" + std::to_string(d) + " tokens=" + std::to_string(tokens) +
                                             (hostile ? " hostile" : "");
                    expect_same(want_state, state, what + " state");
                    expect_same(want_out, out, what + " out");
                }
            }
}

// A run of tokens gives the bits of the same tokens one call at a time (the
// fused sweeps reorder nothing): decode and prefill agree.
TEST(KdaStep, RunEqualsTokenByToken) {
    std::mt19937 rng(11);
    for (size_t d : {16, 37, 128}) {
        const Case c = make_case(d, 6, rng, false);
        std::vector<Variant> all = variants();
        all.push_back({"scalar", [](float* s, size_t dd, const KdaHeadRun& r, float* sc) { kda_head_run(Isa::scalar, s, dd, r, sc); }});
        for (const Variant& v : all) {
            std::vector<float> scratch(kda_scratch_floats(d));
            std::vector<float> state_run = c.state, out_run = c.out;
            v.run(state_run.data(), d, c.run(out_run.data()), scratch.data());
            std::vector<float> state_one = c.state, out_one = c.out;
            for (size_t t = 0; t < c.tokens; ++t) {
                KdaHeadRun r = c.run(out_one.data());
                r.q += t * c.ld;
                r.k += t * c.ld;
                r.v += t * c.ld;
                r.decay += t * c.ld;
                r.beta += t * r.beta_stride;
                r.out += t * c.ld;
                r.tokens = 1;
                v.run(state_one.data(), d, r, scratch.data());
            }
            expect_same(state_one, state_run, v.name + " state d=" + std::to_string(d));
            expect_same(out_one, out_run, v.name + " out d=" + std::to_string(d));
        }
    }
}

// The reference itself against the formulas in f64 (a fault shared by all
// variants would pass the comparisons above): within 1e-5 of Σ|terms|.
TEST(KdaStep, ScalarMatchesFormulas) {
    std::mt19937 rng(3);
    const size_t d = 24;
    const Case c = make_case(d, 4, rng, false);
    std::vector<float> state = c.state, out = c.out, scratch(kda_scratch_floats(d));
    kda_head_run(Isa::scalar, state.data(), d, c.run(out.data()), scratch.data());
    std::vector<double> s(c.state.begin(), c.state.end()), u(d);
    for (size_t t = 0; t < c.tokens; ++t) {
        const size_t base = t * c.ld;
        for (size_t i = 0; i < d; ++i)
            for (size_t j = 0; j < d; ++j) s[i * d + j] *= c.decay[base + i];
        for (size_t j = 0; j < d; ++j) {
            double sk = 0;
            for (size_t i = 0; i < d; ++i) sk += s[i * d + j] * c.k[base + i];
            u[j] = c.beta[t * 3] * (c.v[base + j] - sk);
        }
        for (size_t i = 0; i < d; ++i)
            for (size_t j = 0; j < d; ++j) s[i * d + j] += c.k[base + i] * u[j];
        for (size_t j = 0; j < d; ++j) {
            double o = 0, mag = 0;
            for (size_t i = 0; i < d; ++i) {
                o += s[i * d + j] * c.q[base + i];
                mag += std::fabs(s[i * d + j] * c.q[base + i]);
            }
            EXPECT_NEAR(out[base + j], o, 1e-5 * (mag + 1e-30)) << "t=" << t << " j=" << j;
        }
    }
}

// Per variant, one thread: µs per head and token at d = 128, for a decode
// step (one token; the states of 72 heads — 9 layers of 8, 4.5 MiB — in
// turn, so they come from memory as in the engine) and a 64-token prefill
// run (one head's 64 KiB state stays in L2).
TEST(KdaStepSpeed, DISABLED_Run) {
    const size_t d = 128, heads = 72;
    std::mt19937 rng(5);
    const Case c = make_case(d, 64, rng, false);
    std::vector<Variant> all = variants();
    all.insert(all.begin(), {"scalar", [](float* s, size_t dd, const KdaHeadRun& r, float* sc) { kda_head_run(Isa::scalar, s, dd, r, sc); }});
    for (const Variant& v : all) {
        if (v.name.find("emulated") != std::string::npos) continue;
        std::vector<float> states(heads * d * d), out(c.out), scratch(kda_scratch_floats(d));
        for (size_t h = 0; h < heads; ++h) std::copy(c.state.begin(), c.state.end(), states.begin() + h * d * d);
        KdaHeadRun one = c.run(out.data());
        one.tokens = 1;
        auto time = [&](size_t reps, auto&& body) {
            double best = 1e30;
            for (int trial = 0; trial < 5; ++trial) {
                const auto t0 = std::chrono::steady_clock::now();
                for (size_t r = 0; r < reps; ++r) body();
                best = std::min(best, std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
            }
            return best;
        };
        const double decode = time(20, [&] {
            for (size_t h = 0; h < heads; ++h) v.run(states.data() + h * d * d, d, one, scratch.data());
        }) / (20.0 * heads);
        const double prefill = time(10, [&] { v.run(states.data(), d, c.run(out.data()), scratch.data()); }) / (10.0 * 64);
        std::printf("%-8s decode %.2f us/head/token, prefill %.2f us/head/token\n", v.name.c_str(), decode, prefill);
    }
}

}  // namespace
}  // namespace waste::kernels
