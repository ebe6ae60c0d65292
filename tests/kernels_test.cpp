// kernels_test.cpp — every ISA variant of the kernels against the scalar
// reference (docs/design.md "Testing"): the trunk matvec (F32, Q8G, Q4G, Q3G)
// and the VQ lookup-table build and apply (VQ3R, VQ2R, VQ4P, other stage
// counts), on shapes with ragged edges (columns not a multiple of the group
// or the vector width, rows not a multiple of 16 or 64, row ranges that start
// and end mid-block).
//
// Variants: every Isa the CPU runs (called explicitly, whatever WASTE_ISA
// says), plus — when SIMDe's headers are installed (Debian: libsimde-dev) —
// the AVX-512 bodies (src/kernels/isa_avx512.inc) and the AArch64 NEON bodies
// (src/kernels/isa_neon.inc) compiled over SIMDe's portable intrinsics, so
// they are checked on CPUs without AVX-512 and on x86 too. (SIMDe's vfmaq_f32
// without FMA hardware is an unfused multiply-add: the emulated NEON trunk
// and matmul kernels round like a real CPU's only within the tolerances
// below; the VQ build and apply use no FMA and are checked bit for bit.)
//
// Tolerances:
// * trunk matvec: |y - y_scalar| <= 1e-5 · Σ_i |w_i·x_i| per row. The variants
//   sum in another order with FMA; f32 rounding differences of such sums grow
//   like sqrt(n)·2^-24 of Σ|w·x| (~2e-6 at the widths here, the worst case
//   n·2^-24 is never approached by random signs), while any real fault — a
//   weight decoded wrong, an element dropped or counted twice — moves the sum
//   by about 1/cols of Σ|w·x| (>= 1e-3 here).
// * VQ build and apply: bit-identical (the variants do the reference's
//   operations in the reference's order, lanes side by side).
// * Any split of the rows (threads) gives bit-identical rows.
//
// KernelSpeed.DISABLED_* are micro-benchmarks, not tests: run them with
//   ./kernels_test --gtest_also_run_disabled_tests --gtest_filter='KernelSpeed.*'
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "format/f16.h"
#include "format/trunk_codec.h"
#include "kernels/isa_kernels.h"
#include "kernels/trunk_int8.h"
#include "kernels/trunk_matmul.h"
#include "kernels/trunk_matvec.h"
#include "kernels/vq_lut.h"
#include "kernels/vq_int8_build.h"
#include "kernels/vq_matmul.h"
#include "platform/thread_pool.h"
#include "platform/thread_scratch.h"
#include "trunk_tensors.h"

#if WASTE_X86_SIMD && __has_include(<simde/x86/avx512.h>) && !defined(__AVX512F__)
#define WASTE_TEST_EMULATED_AVX512 1
#define SIMDE_ENABLE_NATIVE_ALIASES
// SIMDe's 64-byte vector types are returned by value without AVX-512: GCC
// prints one "-Wpsabi" note per build of this file (no pragma reaches it;
// SIMDE_NO_VECTOR does not compile in SIMDe 0.7.4); the ABI difference does
// not matter inside one test binary.
#include <simde/x86/avx512.h>

namespace waste::kernels::emu {

// The intrinsics isa_avx512.inc uses that SIMDe 0.7 lacks, written from
// Intel's definitions.
using __mmask16 = simde__mmask16;
using __mmask64 = simde__mmask64;

template <typename To, typename From>
inline To bits_as(const From& from) {
    static_assert(sizeof(To) == sizeof(From));
    To to;
    std::memcpy(&to, &from, sizeof(To));
    return to;
}
struct F16 { float v[16]; };
struct I16 { int32_t v[16]; };
inline __m512 _mm512_maskz_loadu_ps(__mmask16 k, const void* p) {
    F16 r{};
    for (int l = 0; l < 16; ++l)
        if ((k >> l) & 1) std::memcpy(&r.v[l], static_cast<const char*>(p) + 4 * l, 4);
    return bits_as<__m512>(r);
}
inline __m512i _mm512_maskz_loadu_epi32(__mmask16 k, const void* p) {
    I16 r{};
    for (int l = 0; l < 16; ++l)
        if ((k >> l) & 1) std::memcpy(&r.v[l], static_cast<const char*>(p) + 4 * l, 4);
    return bits_as<__m512i>(r);
}
inline void _mm512_mask_storeu_ps(void* p, __mmask16 k, __m512 a) {
    const F16 f = bits_as<F16>(a);
    for (int l = 0; l < 16; ++l)
        if ((k >> l) & 1) std::memcpy(static_cast<char*>(p) + 4 * l, &f.v[l], 4);
}
inline float _mm512_reduce_add_ps(__m512 a) {
    const F16 f = bits_as<F16>(a);
    float s = 0;
    for (float v : f.v) s += v;
    return s;
}
inline __m512i _mm512_cvtepi8_epi32(__m128i a) {
    int8_t b[16];
    std::memcpy(b, &a, 16);
    I16 r;
    for (int l = 0; l < 16; ++l) r.v[l] = b[l];
    return bits_as<__m512i>(r);
}
inline __m512i _mm512_cvtepu8_epi32(__m128i a) {
    uint8_t b[16];
    std::memcpy(b, &a, 16);
    I16 r;
    for (int l = 0; l < 16; ++l) r.v[l] = b[l];
    return bits_as<__m512i>(r);
}
inline __m512i _mm512_cvtepu16_epi32(__m256i a) {
    uint16_t b[16];
    std::memcpy(b, &a, 32);
    I16 r;
    for (int l = 0; l < 16; ++l) r.v[l] = b[l];
    return bits_as<__m512i>(r);
}
inline __m512 _mm512_cvtepi32_ps(__m512i a) {
    const I16 i = bits_as<I16>(a);
    F16 r;
    for (int l = 0; l < 16; ++l) r.v[l] = static_cast<float>(i.v[l]);
    return bits_as<__m512>(r);
}
inline __m512 _mm512_mask_i32gather_ps(__m512 src, __mmask16 k, __m512i index, const void* base, int scale) {
    F16 r = bits_as<F16>(src);
    const I16 i = bits_as<I16>(index);
    for (int l = 0; l < 16; ++l)
        if ((k >> l) & 1) std::memcpy(&r.v[l], static_cast<const char*>(base) + static_cast<ptrdiff_t>(i.v[l]) * scale, 4);
    return bits_as<__m512>(r);
}
inline __m512i _mm512_cvtps_epi32(__m512 a) {  // the default rounding (to nearest even); NaN and out of range: INT_MIN
    const F16 f = bits_as<F16>(a);
    I16 r;
    for (int l = 0; l < 16; ++l) {
        const float v = std::nearbyint(f.v[l]);
        r.v[l] = v >= -2147483648.0f && v < 2147483648.0f ? static_cast<int32_t>(v) : INT32_MIN;
    }
    return bits_as<__m512i>(r);
}
inline __m512i _mm512_maskz_loadu_epi8(__mmask64 k, const void* p) {
    uint8_t r[64] = {};
    for (int l = 0; l < 64; ++l)
        if ((k >> l) & 1) r[l] = static_cast<const uint8_t*>(p)[l];
    return bits_as<__m512i>(r);
}
inline __m512i _mm512_cvtepi16_epi32(__m256i a) {
    int16_t h[16];
    std::memcpy(h, &a, 32);
    I16 r;
    for (int l = 0; l < 16; ++l) r.v[l] = h[l];
    return bits_as<__m512i>(r);
}
inline __m512 _mm512_cvtph_ps(__m256i a) {
    uint16_t h[16];
    std::memcpy(h, &a, 32);
    F16 r;
    for (int l = 0; l < 16; ++l) r.v[l] = format::f16_to_f32(h[l]);
    return bits_as<__m512>(r);
}

// SIMDe computes each lane with plain (unfused) f32 operations and the test is
// not compiled for FMA, so no barrier is needed.
#define WASTE_KEEP(v) ((void)0)
#include "kernels/isa_avx512.inc"
namespace vbmi {
#include "kernels/isa_avx512_vbmi.inc"
}
namespace vnni {
#include "kernels/isa_avx512_vnni.inc"
}
#undef WASTE_KEEP

}  // namespace waste::kernels::emu
#endif

#if !WASTE_NEON_SIMD && __has_include(<simde/arm/neon.h>)
#define WASTE_TEST_EMULATED_NEON 1
#ifndef SIMDE_ENABLE_NATIVE_ALIASES
#define SIMDE_ENABLE_NATIVE_ALIASES
#endif
#include <simde/arm/neon.h>

namespace waste::kernels::neon_emu {
// SIMDe's vmulq_f32/vaddq_f32 are plain f32 operations and the test is not
// compiled for FMA, so no barrier is needed.
#define WASTE_KEEP(v) ((void)0)
#include "kernels/isa_neon.inc"
#undef WASTE_KEEP
}  // namespace waste::kernels::neon_emu
#endif

namespace waste::kernels {
namespace {

using format::TrunkFormat;

// ---------------------------------------------------------------- variants

// The prefill kernels (matmul, vq_matmul) are empty for a variant that has
// none of its own (the emulated AVX-512: the AVX2 bodies serve those CPUs).
struct Variant {
    std::string name;
    std::function<void(const format::LoadedTensor&, const float*, float*, size_t, size_t)> matvec;
    std::function<void(const VqTableShape&, const float*, const float*, float*)> build;
    std::function<void(const VqTableShape&, bool, const uint8_t*, const uint8_t*, const float*, float*, size_t, size_t)>
        apply;
    std::function<void(const format::LoadedTensor&, const float*, size_t, size_t, float*, size_t, size_t, size_t)> matmul;
    std::function<void(const VqTableShape&, bool, const uint8_t*, const uint8_t*, const float*, const float*, size_t, size_t,
                       float*, size_t, size_t, size_t)>
        vq_matmul;
};

Variant native(Isa isa) {
    return Variant{
        isa_name(isa),
        [isa](const format::LoadedTensor& w, const float* x, float* y, size_t b, size_t e) { matvec_rows(isa, w, x, y, b, e); },
        [isa](const VqTableShape& s, const float* books, const float* x, float* t) { build_vq_table(isa, s, books, x, t); },
        [isa](const VqTableShape& s, bool p6, const uint8_t* idx, const uint8_t* sc, const float* t, float* y, size_t b,
              size_t e) { apply_vq_table(isa, s, p6, idx, sc, t, y, b, e); },
        [isa](const format::LoadedTensor& w, const float* x, size_t ldx, size_t tokens, float* y, size_t ldy, size_t b,
              size_t e) { matmul_rows(isa, w, x, ldx, tokens, y, ldy, b, e); },
        [isa](const VqTableShape& s, bool p6, const uint8_t* idx, const uint8_t* sc, const float* books, const float* x,
              size_t ldx, size_t tokens, float* y, size_t ldy, size_t b,
              size_t e) { vq_matmul_rows(isa, s, p6, idx, sc, books, x, ldx, tokens, y, ldy, b, e); }};
}

// Every variant this machine can run except the scalar reference itself.
std::vector<Variant> variants() {
    std::vector<Variant> out;
    for (Isa isa : {Isa::avx2, Isa::avx512, Isa::neon})
        if (isa_runs(isa)) out.push_back(native(isa));
#if defined(WASTE_TEST_EMULATED_AVX512)
    out.push_back(Variant{
        "avx512-emulated",
        [](const format::LoadedTensor& w, const float* x, float* y, size_t b, size_t e) {
            if (!emu::matvec_rows(trunk_view(w), x, y, b, e)) matvec_rows(Isa::scalar, w, x, y, b, e);
        },
        [](const VqTableShape& s, const float* books, const float* x, float* t) {
            if (!emu::build_table(s, books, x, t)) build_vq_table(Isa::scalar, s, books, x, t);
        },
        [](const VqTableShape& s, bool p6, const uint8_t* idx, const uint8_t* sc, const float* t, float* y, size_t b,
           size_t e) {
            if (!emu::apply_table(s, p6, idx, sc, t, y, b, e)) apply_vq_table(Isa::scalar, s, p6, idx, sc, t, y, b, e);
        },
        {},
        {}});
#endif
#if defined(WASTE_TEST_EMULATED_NEON)
    out.push_back(Variant{
        "neon-emulated",
        [](const format::LoadedTensor& w, const float* x, float* y, size_t b, size_t e) {
            if (!neon_emu::matvec_rows(trunk_view(w), x, y, b, e)) matvec_rows(Isa::scalar, w, x, y, b, e);
        },
        [](const VqTableShape& s, const float* books, const float* x, float* t) {
            if (!neon_emu::build_table(s, books, x, t)) build_vq_table(Isa::scalar, s, books, x, t);
        },
        [](const VqTableShape& s, bool p6, const uint8_t* idx, const uint8_t* sc, const float* t, float* y, size_t b,
           size_t e) {
            if (!neon_emu::apply_table(s, p6, idx, sc, t, y, b, e)) apply_vq_table(Isa::scalar, s, p6, idx, sc, t, y, b, e);
        },
        [](const format::LoadedTensor& w, const float* x, size_t ldx, size_t tokens, float* y, size_t ldy, size_t b,
           size_t e) {
            const TrunkView t = trunk_view(w);
            std::vector<float> tile(neon_emu::matmul_tile_floats(t));
            if (!neon_emu::matmul_rows(t, x, ldx, tokens, y, ldy, b, e, tile.data()))
                matmul_rows(Isa::scalar, w, x, ldx, tokens, y, ldy, b, e);
        },
        [](const VqTableShape& s, bool p6, const uint8_t* idx, const uint8_t* sc, const float* books, const float* x,
           size_t ldx, size_t tokens, float* y, size_t ldy, size_t b, size_t e) {
            if (!neon_emu::vq_matmul_rows(s, p6, idx, sc, books, x, ldx, tokens, y, ldy, b, e))
                vq_matmul_rows(Isa::scalar, s, p6, idx, sc, books, x, ldx, tokens, y, ldy, b, e);
        }});
#endif
    return out;
}

TEST(Kernels, ReportsVariants) {
    std::string names;
    for (const Variant& v : variants()) names += " " + v.name;
    std::printf("best_isa=%s active_isa=%s variants:%s\n", isa_name(best_isa()), isa_name(active_isa()),
                names.empty() ? " (none)" : names.c_str());
#if !defined(WASTE_TEST_EMULATED_AVX512)
    if (best_isa() != Isa::avx512)
        std::printf("note: the AVX-512 bodies are not checked here (no AVX-512 CPU, no SIMDe headers)\n");
#endif
#if !defined(WASTE_TEST_EMULATED_NEON)
    if (best_isa() != Isa::neon) std::printf("note: the NEON bodies are not checked here (not AArch64, no SIMDe headers)\n");
#endif
}

// The dispatch picks the build target's own variant: NEON on little-endian
// AArch64, where nothing is probed (scripts/test_arm64.sh runs this cross
// built under qemu-user, so the arm64 run proves the engine used NEON), and
// never NEON elsewhere. WASTE_ISA=scalar is the one way to lower it there.
TEST(Kernels, DispatchChoosesTheTargetsVariant) {
    const char* forced = std::getenv("WASTE_ISA");
#if defined(__aarch64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    EXPECT_EQ(best_isa(), Isa::neon);
    EXPECT_TRUE(isa_runs(Isa::neon));
    EXPECT_FALSE(isa_runs(Isa::avx2));
    EXPECT_FALSE(isa_runs(Isa::avx512));
    EXPECT_EQ(active_isa(), forced && std::string(forced) == "scalar" ? Isa::scalar : Isa::neon)
        << "WASTE_ISA=" << (forced ? forced : "(unset)");
#else
    EXPECT_NE(best_isa(), Isa::neon);
    EXPECT_FALSE(isa_runs(Isa::neon));
    EXPECT_NE(active_isa(), Isa::neon) << "WASTE_ISA=" << (forced ? forced : "(unset)");
#endif
}

// ---------------------------------------------------------------- trunk matvec

std::vector<float> random_floats(size_t n, std::mt19937& rng, float sigma = 1.0f) {
    std::normal_distribution<float> normal(0.0f, sigma);
    std::vector<float> out(n);
    for (float& v : out) v = normal(rng);
    return out;
}


using waste_test::make_trunk;
using waste_test::Trunk;

// Σ_i |w_i x_i| per row, from the dequantised row.
std::vector<double> magnitudes(const format::LoadedTensor& w, const std::vector<float>& x) {
    std::vector<double> out(w.info->rows);
    std::vector<float> row(w.info->cols);
    for (size_t r = 0; r < w.info->rows; ++r) {
        w.row(r, row);
        double s = 0;
        for (size_t i = 0; i < row.size(); ++i) s += std::fabs(static_cast<double>(row[i]) * x[i]);
        out[r] = s;
    }
    return out;
}

struct TrunkCase {
    TrunkFormat fmt;
    uint32_t group;
    size_t rows, cols;
};

TEST(Kernels, TrunkMatvecMatchesScalar) {
    const std::vector<TrunkCase> cases = {
        {TrunkFormat::f32, 128, 37, 1000}, {TrunkFormat::f32, 128, 5, 7},     {TrunkFormat::f32, 128, 19, 33},
        {TrunkFormat::f32, 128, 9, 1024},  {TrunkFormat::q8g, 128, 37, 1000}, {TrunkFormat::q8g, 128, 6, 7},
        {TrunkFormat::q8g, 32, 21, 301},   {TrunkFormat::q8g, 24, 5, 100},    {TrunkFormat::q4g, 128, 37, 1000},
        {TrunkFormat::q4g, 128, 3, 5},     {TrunkFormat::q4g, 64, 23, 1030},  {TrunkFormat::q4g, 128, 17, 2048},
        {TrunkFormat::q4g, 8, 9, 77},      {TrunkFormat::q4g, 48, 7, 100},    {TrunkFormat::q3g, 128, 37, 1000},
        {TrunkFormat::q3g, 128, 4, 9},
        {TrunkFormat::q3g, 32, 19, 333},   {TrunkFormat::q3g, 16, 11, 64},    {TrunkFormat::q3g, 8, 7, 61},
    };
    std::mt19937 rng(1234);
    for (const TrunkCase& c : cases) {
        const Trunk trunk = make_trunk(c.fmt, c.group, c.rows, c.cols, rng);
        const format::LoadedTensor w = trunk.tensor();
        std::vector<float> x(c.cols);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        for (float& v : x) v = normal(rng);
        const std::vector<double> mag = magnitudes(w, x);
        std::vector<float> ref(c.rows);
        matvec_rows(Isa::scalar, w, x.data(), ref.data(), 0, c.rows);
        for (const Variant& variant : variants()) {
            SCOPED_TRACE(variant.name + " " + format::trunk_format_name(c.fmt) + " group " + std::to_string(c.group) + " " +
                         std::to_string(c.rows) + "x" + std::to_string(c.cols));
            std::vector<float> y(c.rows, NAN);
            variant.matvec(w, x.data(), y.data(), 0, c.rows);
            for (size_t r = 0; r < c.rows; ++r)
                ASSERT_LE(std::fabs(static_cast<double>(y[r]) - ref[r]), 1e-5 * mag[r] + 1e-30) << "row " << r;
            // Any split of the rows gives the same bits, and nothing outside
            // [begin, end) is written.
            for (size_t split : {size_t{1}, size_t{3}, size_t{5}, c.rows / 2, c.rows - 1}) {
                if (split == 0 || split >= c.rows) continue;
                std::vector<float> parts(c.rows + 2, -7.0f);
                variant.matvec(w, x.data(), parts.data() + 1, 1, split);
                variant.matvec(w, x.data(), parts.data() + 1, split, c.rows);
                ASSERT_EQ(parts.front(), -7.0f);
                ASSERT_EQ(parts.back(), -7.0f);
                ASSERT_EQ(parts[1], -7.0f);
                ASSERT_EQ(0, std::memcmp(parts.data() + 2, y.data() + 1, 4 * (c.rows - 1))) << "split " << split;
            }
        }
    }
}

// dequantize_rows (MLA's W_UK/W_UV per head) gives W.row()'s bits on every
// ISA this CPU runs: scale · q is exact in f32, so there is no tolerance.
// Rows whose cols are not a multiple of 8 take W.row() itself; a row range
// in the middle of the tensor and a wider ld leave the rest of out alone.
TEST(Kernels, DequantizeRowsMatchesRowBits) {
    const std::vector<TrunkCase> cases = {
        {TrunkFormat::f32, 128, 9, 64},  {TrunkFormat::q8g, 128, 7, 1024}, {TrunkFormat::q8g, 32, 5, 96},
        {TrunkFormat::q4g, 128, 6, 512}, {TrunkFormat::q4g, 64, 5, 200},   {TrunkFormat::q4g, 8, 4, 77},
        {TrunkFormat::q3g, 128, 5, 256}, {TrunkFormat::q3g, 16, 4, 80},    {TrunkFormat::q4g, 48, 3, 144},
    };
    std::mt19937 rng(4321);
    for (const TrunkCase& c : cases) {
        const Trunk trunk = make_trunk(c.fmt, c.group, c.rows, c.cols, rng);
        const format::LoadedTensor w = trunk.tensor();
        const size_t first = 1, n = c.rows - 2, ld = c.cols + 5;
        std::vector<float> ref(n * ld, -7.0f), row(c.cols);
        for (size_t k = 0; k < n; ++k) {
            w.row(first + k, row);
            std::copy(row.begin(), row.end(), ref.begin() + k * ld);
        }
        for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512, Isa::neon}) {
            if (!isa_runs(isa)) continue;
            SCOPED_TRACE(std::string(isa_name(isa)) + " " + format::trunk_format_name(c.fmt) + " group " +
                         std::to_string(c.group) + " cols " + std::to_string(c.cols));
            std::vector<float> out(n * ld, -7.0f);
            dequantize_rows(isa, w, first, n, out.data(), ld);
            for (size_t k = 0; k < n; ++k) {
                ASSERT_EQ(0, std::memcmp(out.data() + k * ld, ref.data() + k * ld, 4 * c.cols)) << "row " << first + k;
                for (size_t j = c.cols; j < ld; ++j) ASSERT_EQ(out[k * ld + j], -7.0f) << "written past cols, row " << k;
            }
        }
    }
}

// The chunk matmul (prefill) of every variant against the scalar
// reference, on the matvec cases at several chunk sizes (token counts that
// leave each micro-kernel's token and row tails), with the matvec's tolerance
// per (token, row); any split of the rows gives the same bits.
TEST(Kernels, TrunkMatmulMatchesScalar) {
    const std::vector<TrunkCase> cases = {
        {TrunkFormat::f32, 128, 37, 1000}, {TrunkFormat::f32, 128, 5, 7},    {TrunkFormat::q8g, 128, 37, 1000},
        {TrunkFormat::q8g, 32, 21, 301},   {TrunkFormat::q8g, 24, 5, 100},   {TrunkFormat::q4g, 128, 37, 1000},
        {TrunkFormat::q4g, 128, 3, 5},     {TrunkFormat::q4g, 64, 23, 1030}, {TrunkFormat::q4g, 8, 9, 77},
        {TrunkFormat::q3g, 128, 37, 1000}, {TrunkFormat::q3g, 32, 19, 333},  {TrunkFormat::q3g, 8, 7, 61},
    };
    std::mt19937 rng(4321);
    for (const TrunkCase& c : cases) {
        const Trunk trunk = make_trunk(c.fmt, c.group, c.rows, c.cols, rng);
        const format::LoadedTensor w = trunk.tensor();
        for (size_t tokens : {size_t{2}, size_t{3}, size_t{7}}) {
            const size_t ldx = c.cols + 3, ldy = c.rows + 2;
            std::vector<float> x = random_floats(tokens * ldx, rng);
            for (size_t t = 0; t < tokens; ++t)  // past cols: never read (NaN would show)
                for (size_t i = c.cols; i < ldx; ++i) x[t * ldx + i] = NAN;
            std::vector<float> ref(tokens * ldy, -7.0f);
            matmul_rows(Isa::scalar, w, x.data(), ldx, tokens, ref.data(), ldy, 0, c.rows);
            for (const Variant& variant : variants()) {
                if (!variant.matmul) continue;
                SCOPED_TRACE(variant.name + " " + format::trunk_format_name(c.fmt) + " group " + std::to_string(c.group) +
                             " " + std::to_string(c.rows) + "x" + std::to_string(c.cols) + " tokens " +
                             std::to_string(tokens));
                std::vector<float> y(tokens * ldy, -7.0f);
                variant.matmul(w, x.data(), ldx, tokens, y.data(), ldy, 0, c.rows);
                for (size_t t = 0; t < tokens; ++t) {
                    const std::vector<double> mag =
                        magnitudes(w, std::vector<float>(x.begin() + t * ldx, x.begin() + t * ldx + c.cols));
                    for (size_t r = 0; r < c.rows; ++r)
                        ASSERT_LE(std::fabs(static_cast<double>(y[t * ldy + r]) - ref[t * ldy + r]), 1e-5 * mag[r] + 1e-30)
                            << "token " << t << " row " << r;
                    for (size_t r = c.rows; r < ldy; ++r) ASSERT_EQ(y[t * ldy + r], -7.0f) << "written past the rows";
                }
                for (size_t split : {size_t{1}, size_t{3}, size_t{5}, c.rows / 2, c.rows - 1}) {
                    if (split == 0 || split >= c.rows) continue;
                    std::vector<float> parts(tokens * ldy, -7.0f);
                    variant.matmul(w, x.data(), ldx, tokens, parts.data(), ldy, 0, split);
                    variant.matmul(w, x.data(), ldx, tokens, parts.data(), ldy, split, c.rows);
                    ASSERT_EQ(0, std::memcmp(parts.data(), y.data(), 4 * tokens * ldy)) << "split " << split;
                }
            }
        }
    }
}

// ---------------------------------------------------------------- VQ tables

struct VqCase {
    const char* name;
    int positions, stages, entries, vec_dim;
    bool packed6;
    size_t rows;
};

const std::vector<VqCase> vq_cases = {
    {"VQ3R", 13, 3, 256, 8, false, 200}, {"VQ2R", 9, 2, 256, 8, false, 130}, {"VQ4P", 11, 4, 64, 8, true, 200},
    {"VQ3R-64", 7, 3, 64, 8, false, 64}, {"S1", 5, 1, 256, 8, false, 77},    {"S4", 6, 4, 256, 8, false, 100},
    {"S5", 4, 5, 256, 8, false, 70},     {"S8", 3, 8, 16, 4, false, 65},     {"odd", 5, 3, 100, 5, false, 33},
    {"D16", 3, 2, 7, 16, false, 1},      {"VQ4P-1row", 3, 4, 64, 8, true, 1},
    // more rows than the AVX-512 apply walks in one pass (4096)
    {"VQ3R-tall", 2, 3, 256, 8, false, 4200},
};

TEST(Kernels, VqBuildMatchesScalarBits) {
    std::mt19937 rng(99);
    for (const VqCase& c : vq_cases) {
        const VqTableShape shape{c.positions, c.stages, c.entries, c.vec_dim};
        const std::vector<float> books = random_floats(static_cast<size_t>(c.stages) * c.entries * c.vec_dim, rng, 0.05f);
        std::vector<float> x = random_floats(static_cast<size_t>(c.positions) * c.vec_dim, rng);
        x[0] = 0.0f;  // signed zeros: 0 + (-0) must stay +0 as in the reference
        std::vector<float> ref(shape.floats() + 1, -7.0f);
        build_vq_table(Isa::scalar, shape, books.data(), x.data(), ref.data());
        for (const Variant& variant : variants()) {
            SCOPED_TRACE(variant.name + " " + c.name);
            std::vector<float> table(shape.floats() + 1, -7.0f);
            variant.build(shape, books.data(), x.data(), table.data());
            ASSERT_EQ(table.back(), -7.0f);
            ASSERT_EQ(0, std::memcmp(table.data(), ref.data(), 4 * shape.floats()));
            // a build over a sub-range of positions (the engine splits
            // positions over threads) gives the same bits
            if (c.positions > 2) {
                VqTableShape part = shape;
                part.positions = c.positions - 2;
                const size_t per_position = static_cast<size_t>(c.stages) * c.entries;
                std::vector<float> sub(part.floats());
                variant.build(part, books.data(), x.data() + 2 * c.vec_dim, sub.data());
                ASSERT_EQ(0, std::memcmp(sub.data(), ref.data() + 2 * per_position, 4 * part.floats()));
            }
        }
    }
}

// Random indices in the v0 layout (whole 64-row blocks; padding rows zero).
std::vector<uint8_t> random_indices(const VqCase& c, std::mt19937& rng) {
    const size_t blocks = (c.rows + 63) / 64, bytes = c.packed6 ? 3 : c.stages;
    std::vector<uint8_t> out(blocks * c.positions * 64 * bytes, 0);
    std::uniform_int_distribution<int> entry(0, c.entries - 1);
    for (size_t r = 0; r < c.rows; ++r)
        for (int v = 0; v < c.positions; ++v) {
            uint8_t* p = out.data() + (((r / 64) * c.positions + v) * 64 + r % 64) * bytes;
            if (c.packed6) {
                const unsigned word = entry(rng) | entry(rng) << 6 | entry(rng) << 12 | entry(rng) << 18;
                p[0] = word & 0xFF;
                p[1] = (word >> 8) & 0xFF;
                p[2] = word >> 16;
            } else {
                for (int s = 0; s < c.stages; ++s) p[s] = static_cast<uint8_t>(entry(rng));
            }
        }
    return out;
}

std::vector<uint8_t> random_scales(size_t rows, std::mt19937& rng) {
    std::uniform_real_distribution<float> uniform(-2.0f, 2.0f);
    std::vector<uint8_t> out(2 * rows);
    for (size_t r = 0; r < rows; ++r) {
        float v = uniform(rng);
        if (r % 17 == 5) v = 3e-6f;  // an f16 subnormal
        const uint16_t bits = format::f32_to_f16(v);
        std::memcpy(out.data() + 2 * r, &bits, 2);
    }
    return out;
}

TEST(Kernels, VqApplyMatchesScalarBits) {
    std::mt19937 rng(7);
    for (const VqCase& c : vq_cases) {
        const VqTableShape shape{c.positions, c.stages, c.entries, c.vec_dim};
        const std::vector<float> table = random_floats(shape.floats(), rng);
        const std::vector<uint8_t> indices = random_indices(c, rng);
        const std::vector<uint8_t> scales = random_scales(c.rows, rng);
        std::vector<float> ref(c.rows);
        apply_vq_table(Isa::scalar, shape, c.packed6, indices.data(), scales.data(), table.data(), ref.data(), 0, c.rows);
        for (const Variant& variant : variants()) {
            SCOPED_TRACE(variant.name + " " + c.name);
            std::vector<float> y(c.rows, NAN);
            variant.apply(shape, c.packed6, indices.data(), scales.data(), table.data(), y.data(), 0, c.rows);
            ASSERT_EQ(0, std::memcmp(y.data(), ref.data(), 4 * c.rows));
            // ranges starting and ending mid-block and mid-vector: same bits,
            // nothing written outside
            const std::vector<size_t> cuts = {0, std::min<size_t>(c.rows, 5), std::min<size_t>(c.rows, 21),
                                              std::min<size_t>(c.rows, 64), std::min<size_t>(c.rows, 71),
                                              std::min<size_t>(c.rows, 4100), c.rows};
            for (size_t i = 0; i + 1 < cuts.size(); ++i) {
                const size_t b = cuts[i], e = cuts[i + 1];
                std::vector<float> part(c.rows, -7.0f);
                variant.apply(shape, c.packed6, indices.data(), scales.data(), table.data(), part.data(), b, e);
                for (size_t r = 0; r < c.rows; ++r) {
                    if (r >= b && r < e) ASSERT_EQ(0, std::memcmp(&part[r], &ref[r], 4)) << "row " << r << " of [" << b << "," << e << ")";
                    else ASSERT_EQ(part[r], -7.0f) << "row " << r << " written outside [" << b << "," << e << ")";
                }
            }
        }
    }
}

// The whole expert path (build from codebooks, apply) for every variant
// against an f64 evaluation of the dequantised matrix: the reference itself
// is right, not only equal to its variants.
TEST(Kernels, VqExpertMatchesDequantised) {
    std::mt19937 rng(5);
    for (const VqCase& c : vq_cases) {
        const VqTableShape shape{c.positions, c.stages, c.entries, c.vec_dim};
        const std::vector<float> books = random_floats(static_cast<size_t>(c.stages) * c.entries * c.vec_dim, rng, 0.05f);
        const std::vector<float> x = random_floats(static_cast<size_t>(c.positions) * c.vec_dim, rng);
        const std::vector<uint8_t> indices = random_indices(c, rng);
        const std::vector<uint8_t> scales = random_scales(c.rows, rng);
        const size_t bytes = c.packed6 ? 3 : c.stages;
        std::vector<double> want(c.rows), mag(c.rows);
        for (size_t r = 0; r < c.rows; ++r) {
            uint16_t bits;
            std::memcpy(&bits, scales.data() + 2 * r, 2);
            const double scale = format::f16_to_f32(bits);
            for (int v = 0; v < c.positions; ++v) {
                const uint8_t* p = indices.data() + (((r / 64) * c.positions + v) * 64 + r % 64) * bytes;
                for (int s = 0; s < c.stages; ++s) {
                    unsigned e = p[s % bytes];
                    if (c.packed6) e = ((p[0] | p[1] << 8 | p[2] << 16) >> (6 * s)) & 63;
                    for (int j = 0; j < c.vec_dim; ++j) {
                        const double w = scale * books[(static_cast<size_t>(s) * c.entries + e) * c.vec_dim + j];
                        want[r] += w * x[v * c.vec_dim + j];
                        mag[r] += std::fabs(w * x[v * c.vec_dim + j]);
                    }
                }
            }
        }
        std::vector<Variant> all = variants();
        all.insert(all.begin(), native(Isa::scalar));
        for (const Variant& variant : all) {
            SCOPED_TRACE(variant.name + " " + c.name);
            std::vector<float> table(shape.floats()), y(c.rows);
            variant.build(shape, books.data(), x.data(), table.data());
            variant.apply(shape, c.packed6, indices.data(), scales.data(), table.data(), y.data(), 0, c.rows);
            for (size_t r = 0; r < c.rows; ++r) ASSERT_LE(std::fabs(y[r] - want[r]), 1e-5 * mag[r] + 1e-30) << "row " << r;
        }
    }
}

// The chunk (prefill) form of the expert matrix: the scalar reference and
// every variant against an f64 evaluation of the dequantised matrix,
// per (token, row) within 1e-5 of Σ|w·x| (f32 sums in other orders; a wrong
// index or a dropped stage moves a row by far more); splits of the rows give
// the same bits.
TEST(Kernels, VqMatmulMatchesDequantised) {
    std::mt19937 rng(31);
    for (const VqCase& c : vq_cases) {
        const VqTableShape shape{c.positions, c.stages, c.entries, c.vec_dim};
        const std::vector<float> books = random_floats(static_cast<size_t>(c.stages) * c.entries * c.vec_dim, rng, 0.05f);
        const std::vector<uint8_t> indices = random_indices(c, rng);
        const std::vector<uint8_t> scales = random_scales(c.rows, rng);
        const size_t bytes = c.packed6 ? 3 : c.stages, cols = static_cast<size_t>(c.positions) * c.vec_dim;
        for (size_t tokens : {size_t{1}, size_t{2}, size_t{7}, size_t{13}}) {
            const size_t ldx = cols + 5, ldy = c.rows + 3;
            std::vector<float> x = random_floats(tokens * ldx, rng);
            std::vector<double> want(tokens * c.rows, 0.0), mag(tokens * c.rows, 0.0);
            for (size_t r = 0; r < c.rows; ++r) {
                uint16_t bits;
                std::memcpy(&bits, scales.data() + 2 * r, 2);
                const double scale = format::f16_to_f32(bits);
                for (int v = 0; v < c.positions; ++v) {
                    const uint8_t* p = indices.data() + (((r / 64) * c.positions + v) * 64 + r % 64) * bytes;
                    for (int s = 0; s < c.stages; ++s) {
                        unsigned e = p[s % bytes];
                        if (c.packed6) e = ((p[0] | p[1] << 8 | p[2] << 16) >> (6 * s)) & 63;
                        for (int j = 0; j < c.vec_dim; ++j) {
                            const double w = scale * books[(static_cast<size_t>(s) * c.entries + e) * c.vec_dim + j];
                            for (size_t t = 0; t < tokens; ++t) {
                                want[t * c.rows + r] += w * x[t * ldx + v * c.vec_dim + j];
                                mag[t * c.rows + r] += std::fabs(w * x[t * ldx + v * c.vec_dim + j]);
                            }
                        }
                    }
                }
            }
            std::vector<Variant> all = variants();
            all.insert(all.begin(), native(Isa::scalar));
            for (const Variant& variant : all) {
                if (!variant.vq_matmul) continue;
                SCOPED_TRACE(variant.name + " " + c.name + " tokens " + std::to_string(tokens));
                std::vector<float> y(tokens * ldy, -7.0f);
                variant.vq_matmul(shape, c.packed6, indices.data(), scales.data(), books.data(), x.data(), ldx, tokens,
                                  y.data(), ldy, 0, c.rows);
                for (size_t t = 0; t < tokens; ++t) {
                    for (size_t r = 0; r < c.rows; ++r)
                        ASSERT_LE(std::fabs(y[t * ldy + r] - want[t * c.rows + r]), 1e-5 * mag[t * c.rows + r] + 1e-30)
                            << "token " << t << " row " << r;
                    for (size_t r = c.rows; r < ldy; ++r) ASSERT_EQ(y[t * ldy + r], -7.0f) << "written past the rows";
                }
                for (size_t split : {size_t{1}, size_t{5}, size_t{64}, c.rows / 2}) {
                    if (split == 0 || split >= c.rows) continue;
                    std::vector<float> parts(tokens * ldy, -7.0f);
                    variant.vq_matmul(shape, c.packed6, indices.data(), scales.data(), books.data(), x.data(), ldx, tokens,
                                      parts.data(), ldy, 0, split);
                    variant.vq_matmul(shape, c.packed6, indices.data(), scales.data(), books.data(), x.data(), ldx, tokens,
                                      parts.data(), ldy, split, c.rows);
                    ASSERT_EQ(0, std::memcmp(parts.data(), y.data(), 4 * tokens * ldy)) << "split " << split;
                }
            }
        }
    }
}

// ---------------------------------------------------------------- int8 approximate mode

using Int8Apply = std::function<void(const VqTableShape&, bool, const uint8_t*, const uint8_t*, const int8_t*, const float*,
                                     float*, size_t, size_t)>;

std::vector<std::pair<std::string, Int8Apply>> int8_variants() {
    std::vector<std::pair<std::string, Int8Apply>> out;
    if (WASTE_X86_SIMD && isa_runs(Isa::avx2))
        out.emplace_back("avx2", [](const VqTableShape& s, bool p6, const uint8_t* idx, const uint8_t* sc, const int8_t* q,
                                    const float* bs, float* y, size_t b, size_t e) {
            apply_vq_table_int8(Isa::avx2, s, p6, idx, sc, q, bs, y, b, e);
        });
    if (vq_int8_fast_path())
        out.emplace_back("avx512-vbmi", [](const VqTableShape& s, bool p6, const uint8_t* idx, const uint8_t* sc,
                                           const int8_t* q, const float* bs, float* y, size_t b, size_t e) {
            apply_vq_table_int8(Isa::avx512, s, p6, idx, sc, q, bs, y, b, e);
        });
#if defined(WASTE_TEST_EMULATED_AVX512)
    out.emplace_back("avx512-vbmi-emulated", [](const VqTableShape& s, bool p6, const uint8_t* idx, const uint8_t* sc,
                                                const int8_t* q, const float* bs, float* y, size_t b, size_t e) {
        if (!emu::vbmi::apply_int8(s, p6, idx, sc, q, bs, y, b, e))
            apply_vq_table_int8(Isa::scalar, s, p6, idx, sc, q, bs, y, b, e);
    });
#endif
    return out;
}

const std::vector<VqCase> int8_cases = {
    {"VQ3R", 70, 3, 256, 8, false, 200}, {"VQ2R", 33, 2, 256, 8, false, 130}, {"VQ4P", 45, 4, 64, 8, true, 100},
    {"S1", 40, 1, 256, 8, false, 77},    {"S4", 35, 4, 256, 8, false, 64},    {"E100", 31, 3, 100, 8, false, 90},
    {"E200", 32, 3, 200, 8, false, 65},  {"E40", 65, 2, 40, 8, false, 3},     {"S6", 9, 6, 256, 8, false, 70},
    {"VQ3R-wide", 40, 3, 256, 8, false, 600},  // 10 row blocks: the walks of 4 blocks at once and their remainder
};

// An int8 table writer (quantise_vq_table_int8 or build_vq_table_int8, one
// variant) against the reference's bytes and block scales: the whole table,
// then from the second block on, as a thread's part (first_position: where
// the part starts in the table).
using Int8TableWriter = std::function<void(const VqTableShape&, size_t first_position, int8_t* q, float* block_scales)>;
void expect_reference_int8_table(const VqTableShape& shape, const std::vector<int8_t>& ref,
                                 const std::vector<float>& ref_scales, const Int8TableWriter& write) {
    const size_t per_position = static_cast<size_t>(shape.stages) * shape.entries;
    std::vector<int8_t> q(shape.floats(), 99);
    std::vector<float> scales(vq_int8_blocks(shape), -1.0f);
    write(shape, 0, q.data(), scales.data());
    ASSERT_EQ(0, std::memcmp(q.data(), ref.data(), q.size()));
    ASSERT_EQ(0, std::memcmp(scales.data(), ref_scales.data(), 4 * scales.size()));
    if (shape.positions <= vq_int8_block) return;
    VqTableShape part = shape;
    part.positions = shape.positions - vq_int8_block;
    std::vector<int8_t> q2(part.floats(), 99);
    std::vector<float> scales2(vq_int8_blocks(part), -1.0f);
    write(part, vq_int8_block, q2.data(), scales2.data());
    ASSERT_EQ(0, std::memcmp(q2.data(), ref.data() + vq_int8_block * per_position, q2.size()));
    ASSERT_EQ(0, std::memcmp(scales2.data(), ref_scales.data() + 1, 4 * scales2.size()));
}

// The int8 table itself: every ISA quantises to the scalar reference's
// bytes and block scales, including NaN and infinite entries, an all-zero
// block and a part of a table that starts at a block boundary.
TEST(Kernels, VqInt8QuantizeMatchesScalarBits) {
    std::mt19937 rng(19);
    for (const VqCase& c : int8_cases) {
        const VqTableShape shape{c.positions, c.stages, c.entries, c.vec_dim};
        std::vector<float> table = random_floats(shape.floats(), rng);
        const size_t per_position = static_cast<size_t>(c.stages) * c.entries;
        if (c.positions > 40) {  // block 1 holds a NaN and an infinity
            table[33 * per_position + 5] = NAN;
            table[35 * per_position + 1] = INFINITY;
        }
        if (c.positions > 64) std::fill(table.begin() + 64 * per_position, table.begin() + 65 * per_position, 0.0f);
        table[3] = NAN;  // a NaN in block 0 is skipped by the max
        std::vector<int8_t> ref(shape.floats());
        std::vector<float> ref_scales(vq_int8_blocks(shape));
        quantize_vq_table_int8(Isa::scalar, shape, table.data(), ref.data(), ref_scales.data());
        for (Isa isa : {Isa::avx2, Isa::avx512}) {
            if (!isa_runs(isa)) continue;
            SCOPED_TRACE(std::string(isa_name(isa)) + " " + c.name);
            expect_reference_int8_table(shape, ref, ref_scales, [&](const VqTableShape& s, size_t first, int8_t* q, float* bs) {
                quantize_vq_table_int8(isa, s, table.data() + first * per_position, q, bs);
            });
        }
#if defined(WASTE_TEST_EMULATED_AVX512)
        {  // the AVX-512 body over SIMDe, on a machine without AVX-512
            SCOPED_TRACE(std::string("avx512-emulated ") + c.name);
            expect_reference_int8_table(shape, ref, ref_scales, [&](const VqTableShape& s, size_t first, int8_t* q, float* bs) {
                emu::quantize_int8(s, table.data() + first * per_position, q, bs);
            });
        }
#endif
    }
}

TEST(Kernels, VqInt8MatchesScalarBits) {
    std::mt19937 rng(17);
    for (const VqCase& c : int8_cases) {
        const VqTableShape shape{c.positions, c.stages, c.entries, c.vec_dim};
        const std::vector<float> table = random_floats(shape.floats(), rng);
        std::vector<int8_t> q(shape.floats());
        std::vector<float> block_scales(vq_int8_blocks(shape));
        quantize_vq_table_int8(shape, table.data(), q.data(), block_scales.data());
        const std::vector<uint8_t> indices = random_indices(c, rng);
        const std::vector<uint8_t> scales = random_scales(c.rows, rng);
        std::vector<float> ref(c.rows);
        apply_vq_table_int8(Isa::scalar, shape, c.packed6, indices.data(), scales.data(), q.data(), block_scales.data(),
                            ref.data(), 0, c.rows);
        for (const auto& [name, apply] : int8_variants()) {
            SCOPED_TRACE(name + " " + c.name);
            const std::vector<size_t> cuts = {0, std::min<size_t>(c.rows, 5), std::min<size_t>(c.rows, 64),
                                              std::min<size_t>(c.rows, 71), c.rows};
            std::vector<float> y(c.rows, NAN);
            apply(shape, c.packed6, indices.data(), scales.data(), q.data(), block_scales.data(), y.data(), 0, c.rows);
            ASSERT_EQ(0, std::memcmp(y.data(), ref.data(), 4 * c.rows));
            for (size_t i = 0; i + 1 < cuts.size(); ++i) {
                std::vector<float> part(c.rows, -7.0f);
                apply(shape, c.packed6, indices.data(), scales.data(), q.data(), block_scales.data(), part.data(), cuts[i],
                      cuts[i + 1]);
                for (size_t r = 0; r < c.rows; ++r) {
                    if (r >= cuts[i] && r < cuts[i + 1]) ASSERT_EQ(0, std::memcmp(&part[r], &ref[r], 4)) << "row " << r;
                    else ASSERT_EQ(part[r], -7.0f) << "row " << r;
                }
            }
        }
    }
}

// The int8 tables built in integers (build_vq_table_int8): every ISA gives
// the scalar reference's bytes and block scales, for 8-dim vectors and for
// others (5, 12: padded dwords), whole tables and parts from a block
// boundary; a NaN or infinite input position makes its block NaN with zero
// bytes, an all-zero block has scale 0. And the reference itself is the
// table it stands for: q · block_scale within 2% of the block's max |T| of
// the f32 table (the three int8 roundings add at most about
// 0.4% + 0.4% + 0.4% · vec_dim·max|x||c| / max|T|; 2% fails on any wrong
// scale, sign or index, which are off by the table's whole size).
TEST(Kernels, VqInt8BuildMatchesScalarBitsAndTheTable) {
    std::mt19937 rng(29);
    std::vector<VqCase> cases = int8_cases;
    cases.push_back({"D5", 70, 3, 256, 5, false, 64});
    cases.push_back({"D12", 40, 2, 100, 12, false, 64});
    for (const VqCase& c : cases) {
        const VqTableShape shape{c.positions, c.stages, c.entries, c.vec_dim};
        const size_t book_floats = static_cast<size_t>(c.entries) * c.vec_dim;
        const std::vector<float> books = random_floats(c.stages * book_floats, rng, 0.05f);
        std::vector<VqInt8Book> books8;
        for (int s = 0; s < c.stages; ++s)
            books8.push_back(quantize_vq_codebook_int8(c.entries, c.vec_dim, books.data() + s * book_floats));
        std::vector<float> x = random_floats(static_cast<size_t>(c.positions) * c.vec_dim, rng);
        const bool special = c.positions > 64;
        if (special) {
            x[33 * c.vec_dim + 1] = NAN;                                   // block 1: NaN
            std::fill(x.begin() + 64 * c.vec_dim, x.end(), 0.0f);          // block 2: all zero
        }
        const size_t stride = vq_int8_input_stride(shape);
        std::vector<uint8_t> xu(c.positions * stride);
        std::vector<float> xs(c.positions);
        quantize_vq_input_int8(shape, x.data(), xu.data(), xs.data());
        std::vector<int8_t> ref(shape.floats(), 99);
        std::vector<float> ref_scales(vq_int8_blocks(shape), -1.0f);
        build_vq_table_int8(Isa::scalar, shape, books8.data(), xu.data(), xs.data(), ref.data(), ref_scales.data());
        if (special) {
            ASSERT_TRUE(std::isnan(ref_scales[1])) << c.name;
            ASSERT_EQ(ref_scales[2], 0.0f) << c.name;
            const size_t per_block = vq_int8_block * static_cast<size_t>(c.stages) * c.entries;
            for (size_t i = per_block; i < ref.size(); ++i) ASSERT_EQ(ref[i], 0) << c.name << " entry " << i;
        }
        // against the f32 table, in the finite blocks
        std::vector<float> table(shape.floats());
        build_vq_table(Isa::scalar, shape, books.data(), x.data(), table.data());
        const size_t per_position = static_cast<size_t>(c.stages) * c.entries;
        for (size_t b = 0; b < ref_scales.size(); ++b) {
            if (!std::isfinite(ref_scales[b]) || ref_scales[b] == 0) continue;
            const size_t begin = b * vq_int8_block * per_position;
            const size_t end = std::min<size_t>(c.positions, (b + 1) * vq_int8_block) * per_position;
            float max_t = 0, max_err = 0;
            for (size_t i = begin; i < end; ++i) max_t = std::max(max_t, std::fabs(table[i]));
            for (size_t i = begin; i < end; ++i) max_err = std::max(max_err, std::fabs(ref[i] * ref_scales[b] - table[i]));
            EXPECT_LT(max_err, 0.02f * max_t) << c.name << " block " << b;
        }
        std::vector<std::pair<std::string, Int8TableWriter>> variants;
        for (Isa isa : {Isa::avx2, Isa::avx512})
            if (isa_runs(isa))
                variants.emplace_back(isa_name(isa), [&, isa](const VqTableShape& s, size_t first, int8_t* q, float* bs) {
                    build_vq_table_int8(isa, s, books8.data(), xu.data() + first * stride, xs.data() + first, q, bs);
                });
#if defined(WASTE_TEST_EMULATED_AVX512)
        variants.emplace_back("avx512-vnni-emulated", [&](const VqTableShape& s, size_t first, int8_t* q, float* bs) {
            ASSERT_TRUE(emu::vnni::build_int8(s, books8.data(), xu.data() + first * stride, xs.data() + first, q, bs));
        });
#endif
        for (const auto& [name, build] : variants) {
            SCOPED_TRACE(name + " " + c.name);
            expect_reference_int8_table(shape, ref, ref_scales, build);
        }
    }
}

// The approximation's error per matvec vs the exact f32 path, on tables built
// from Gaussian inputs and codebooks (a trained model's tables may differ):
// relative L2 error ||y8 - y|| / ||y|| over the rows. Reported, and bounded
// loosely (an int8 step is max|T|/127 per 32 positions).
TEST(Kernels, VqInt8Error) {
    std::mt19937 rng(23);
    struct Shape { const char* name; int positions, stages, entries; bool packed6; size_t rows; };
    for (const Shape& c : {Shape{"mid-gate VQ3R", 128, 3, 256, false, 512}, Shape{"mid-down VQ3R", 64, 3, 256, false, 1024},
                           Shape{"mid-gate VQ2R", 128, 2, 256, false, 512}, Shape{"mid-gate VQ4P", 128, 4, 64, true, 512}}) {
        const VqCase vc{c.name, c.positions, c.stages, c.entries, 8, c.packed6, c.rows};
        const VqTableShape shape{c.positions, c.stages, c.entries, 8};
        const std::vector<float> books = random_floats(static_cast<size_t>(c.stages) * c.entries * 8, rng, 0.05f);
        const std::vector<float> x = random_floats(static_cast<size_t>(c.positions) * 8, rng);
        const std::vector<uint8_t> indices = random_indices(vc, rng);
        const std::vector<uint8_t> scales = random_scales(c.rows, rng);
        std::vector<float> table(shape.floats()), exact(c.rows), approx(c.rows);
        build_vq_table(Isa::scalar, shape, books.data(), x.data(), table.data());
        apply_vq_table(Isa::scalar, shape, c.packed6, indices.data(), scales.data(), table.data(), exact.data(), 0, c.rows);
        std::vector<int8_t> q(shape.floats());
        std::vector<float> block_scales(vq_int8_blocks(shape));
        quantize_vq_table_int8(shape, table.data(), q.data(), block_scales.data());
        apply_vq_table_int8(Isa::scalar, shape, c.packed6, indices.data(), scales.data(), q.data(), block_scales.data(),
                            approx.data(), 0, c.rows);
        double num = 0, den = 0;
        for (size_t r = 0; r < c.rows; ++r) {
            num += (approx[r] - exact[r]) * static_cast<double>(approx[r] - exact[r]);
            den += exact[r] * static_cast<double>(exact[r]);
        }
        const double rel = std::sqrt(num / den);
        // the tables decode builds in integers (build_vq_table_int8)
        std::vector<VqInt8Book> books8;
        for (int s = 0; s < c.stages; ++s)
            books8.push_back(quantize_vq_codebook_int8(c.entries, 8, books.data() + static_cast<size_t>(s) * c.entries * 8));
        std::vector<uint8_t> xu(c.positions * vq_int8_input_stride(shape));
        std::vector<float> xs(c.positions);
        quantize_vq_input_int8(shape, x.data(), xu.data(), xs.data());
        build_vq_table_int8(Isa::scalar, shape, books8.data(), xu.data(), xs.data(), q.data(), block_scales.data());
        apply_vq_table_int8(Isa::scalar, shape, c.packed6, indices.data(), scales.data(), q.data(), block_scales.data(),
                            approx.data(), 0, c.rows);
        double num_int = 0;
        for (size_t r = 0; r < c.rows; ++r) num_int += (approx[r] - exact[r]) * static_cast<double>(approx[r] - exact[r]);
        const double rel_int = std::sqrt(num_int / den);
        std::printf("VQINT8ERROR %s relative_l2=%.2e integer_built=%.2e\n", c.name, rel, rel_int);
        EXPECT_LT(rel, 2e-2) << c.name;
        EXPECT_LT(rel_int, 2e-2) << c.name;
    }
}

// ---------------------------------------------------------------- speed (not tests)

double median_ns(const std::function<void()>& body, int reps) {
    body();  // warm
    std::vector<double> t;
    for (int i = 0; i < reps; ++i) {
        const auto a = std::chrono::steady_clock::now();
        body();
        t.push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - a).count());
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

std::vector<Isa> native_isas() {
    std::vector<Isa> out;
    for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512, Isa::neon})
        if (isa_runs(isa)) out.push_back(isa);
    return out;
}

void bench_expert(const char* shape_name, size_t inter, size_t lat, int stages, int entries, bool packed6) {
    std::mt19937 rng(3);
    const int dim = 8;
    const VqCase in_case{"in", static_cast<int>(lat / dim), stages, entries, dim, packed6, inter};
    const VqCase down_case{"down", static_cast<int>(inter / dim), stages, entries, dim, packed6, lat};
    const VqTableShape in_shape{in_case.positions, stages, entries, dim}, down_shape{down_case.positions, stages, entries, dim};
    const std::vector<float> books = random_floats(static_cast<size_t>(stages) * entries * dim, rng, 0.05f);
    const std::vector<float> x = random_floats(lat, rng), h = random_floats(inter, rng);
    const std::vector<uint8_t> gate_idx = random_indices(in_case, rng), down_idx = random_indices(down_case, rng);
    const std::vector<uint8_t> gate_sc = random_scales(inter, rng), down_sc = random_scales(lat, rng);
    std::vector<float> in_table(in_shape.floats()), down_table(down_shape.floats()), g(inter), out(lat);
    const int reps = inter > 1024 ? 7 : 31;
    const char* fmt = packed6 ? "VQ4P" : stages == 2 ? "VQ2R" : "VQ3R";
    for (Isa isa : native_isas()) {
        const double build_in = median_ns([&] { build_vq_table(isa, in_shape, books.data(), x.data(), in_table.data()); }, reps);
        const double apply_in = median_ns([&] {
            apply_vq_table(isa, in_shape, packed6, gate_idx.data(), gate_sc.data(), in_table.data(), g.data(), 0, inter);
        }, reps);
        const double build_down = median_ns([&] { build_vq_table(isa, down_shape, books.data(), h.data(), down_table.data()); }, reps);
        const double apply_down = median_ns([&] {
            apply_vq_table(isa, down_shape, packed6, down_idx.data(), down_sc.data(), down_table.data(), out.data(), 0, lat);
        }, reps);
        const double lookups_in = static_cast<double>(inter) * in_shape.positions * stages;
        const double lookups_down = static_cast<double>(lat) * down_shape.positions * stages;
        // the approximate int8 mode (--lut int8) on the same tables
        std::vector<int8_t> in_q(in_shape.floats()), down_q(down_shape.floats());
        std::vector<float> in_bs(vq_int8_blocks(in_shape)), down_bs(vq_int8_blocks(down_shape));
        quantize_vq_table_int8(isa, in_shape, in_table.data(), in_q.data(), in_bs.data());
        const double quantize_down = median_ns(
            [&] { quantize_vq_table_int8(isa, down_shape, down_table.data(), down_q.data(), down_bs.data()); }, reps);
        const double int8_in = median_ns([&] {
            apply_vq_table_int8(isa, in_shape, packed6, gate_idx.data(), gate_sc.data(), in_q.data(), in_bs.data(), g.data(),
                                0, inter);
        }, reps);
        std::vector<VqInt8Book> books8;
        for (int s = 0; s < stages; ++s)
            books8.push_back(quantize_vq_codebook_int8(entries, dim, books.data() + static_cast<size_t>(s) * entries * dim));
        std::vector<uint8_t> in_xu(in_shape.positions * vq_int8_input_stride(in_shape));
        std::vector<uint8_t> down_xu(down_shape.positions * vq_int8_input_stride(down_shape));
        std::vector<float> in_xs(in_shape.positions), down_xs(down_shape.positions);
        const double int8_build_in = median_ns([&] {
            quantize_vq_input_int8(in_shape, x.data(), in_xu.data(), in_xs.data());
            build_vq_table_int8(isa, in_shape, books8.data(), in_xu.data(), in_xs.data(), in_q.data(), in_bs.data());
        }, reps);
        const double int8_build_down = median_ns([&] {
            quantize_vq_input_int8(down_shape, h.data(), down_xu.data(), down_xs.data());
            build_vq_table_int8(isa, down_shape, books8.data(), down_xu.data(), down_xs.data(), down_q.data(), down_bs.data());
        }, reps);
        const double int8_down = median_ns([&] {
            apply_vq_table_int8(isa, down_shape, packed6, down_idx.data(), down_sc.data(), down_q.data(), down_bs.data(),
                                out.data(), 0, lat);
        }, reps);
        // one routed expert on one thread: gate + up apply (tables shared by
        // the top-k, not counted), down build + apply
        const double expert = 2 * apply_in + build_down + apply_down;
        std::printf("KERNELSPEED vq shape=%s fmt=%s entries=%d isa=%s build_in_ns=%.0f apply_in_ns=%.0f "
                    "apply_in_lookups_per_ns=%.3f build_down_ns=%.0f apply_down_ns=%.0f apply_down_lookups_per_ns=%.3f "
                    "expert_ns=%.0f int8_apply_in_lookups_per_ns=%.3f int8_apply_down_lookups_per_ns=%.3f "
                    "int8_quantize_down_ns=%.0f int8_build_in_ns=%.0f int8_build_down_ns=%.0f int8_expert_ns=%.0f\n",
                    shape_name, fmt, entries, isa_name(isa), build_in, apply_in, lookups_in / apply_in, build_down,
                    apply_down, lookups_down / apply_down, expert, lookups_in / int8_in, lookups_down / int8_down,
                    quantize_down, int8_build_in, int8_build_down, 2 * int8_in + int8_build_down + int8_down);
    }
}

// Prefill's expert product (kernels/vq_matmul.h): one mid expert's gate
// rows against `tokens` tokens, the routed share of a 64-token chunk being ~8.
void bench_vq_matmul(size_t tokens) {
    std::mt19937 rng(5);
    const size_t inter = 512, lat = 1024;
    const VqCase in_case{"in", static_cast<int>(lat / 8), 3, 256, 8, false, inter};
    const VqTableShape shape{in_case.positions, 3, 256, 8};
    const std::vector<float> books = random_floats(3 * 256 * 8, rng, 0.05f);
    const std::vector<float> x0 = random_floats(tokens * lat, rng);
    std::vector<float> x_buffer(x0.size() + 16);  // x at a 64-byte boundary, as the engine's workspace holds it
    float* x = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(x_buffer.data()) + 63) & ~uintptr_t{63});
    std::copy(x0.begin(), x0.end(), x);
    const std::vector<uint8_t> idx = random_indices(in_case, rng);
    const std::vector<uint8_t> sc = random_scales(inter, rng);
    std::vector<float> y(tokens * inter);
    for (Isa isa : native_isas()) {
        const double ns = median_ns([&] {
            vq_matmul_rows(isa, shape, false, idx.data(), sc.data(), books.data(), x, lat, tokens, y.data(), inter, 0, inter);
        }, 31);
        std::printf("KERNELSPEED vq_matmul shape=mid-gate tokens=%zu isa=%s ns=%.0f gmacs=%.2f\n", tokens, isa_name(isa), ns,
                    static_cast<double>(tokens) * inter * lat / ns);
    }
}

TEST(KernelSpeed, DISABLED_VqMatmul) {
    for (size_t tokens : {size_t{1}, size_t{8}, size_t{32}}) bench_vq_matmul(tokens);
}

TEST(KernelSpeed, DISABLED_VqExpert) {
    bench_expert("mid", 512, 1024, 3, 256, false);
    bench_expert("mid", 512, 1024, 2, 256, false);
    bench_expert("mid", 512, 1024, 4, 64, true);
    bench_expert("qwen3-30b", 768, 2048, 3, 256, false);
    bench_expert("K3", 3072, 3584, 3, 256, false);
}

void bench_trunk(TrunkFormat fmt, size_t rows, size_t cols) {
    std::mt19937 rng(11);
    const Trunk trunk = make_trunk(fmt, 128, rows, cols, rng);
    const format::LoadedTensor w = trunk.tensor();
    const std::vector<float> x = random_floats(cols, rng);
    std::vector<float> y(rows);
    const double bytes = static_cast<double>(trunk.info.payload_bytes + trunk.info.scale_bytes);
    const int reps = rows * cols > (1u << 22) ? 9 : 41;
    platform::ThreadPool pool(2);
    for (Isa isa : native_isas()) {
        const double one = median_ns([&] { matvec_rows(isa, w, x.data(), y.data(), 0, rows); }, reps);
        const double two = median_ns([&] {
            pool.parallel_for(rows, [&](size_t b, size_t e) { matvec_rows(isa, w, x.data(), y.data(), b, e); }, 16);
        }, reps);
        std::printf("KERNELSPEED trunk fmt=%s rows=%zu cols=%zu isa=%s ns_1thread=%.0f GBps_1thread=%.2f ns_2threads=%.0f "
                    "GBps_2threads=%.2f\n",
                    format::trunk_format_name(fmt), rows, cols, isa_name(isa), one, bytes / one, two, bytes / two);
    }
}

// The int8 mode's trunk product (trunk_int8.h) beside the exact one, one
// thread, rows of a decode step and of a 64-token chunk.
void bench_trunk_int8(TrunkFormat fmt, size_t rows, size_t cols) {
    std::mt19937 rng(11);
    const Trunk trunk = make_trunk(fmt, 128, rows, cols, rng);
    const format::LoadedTensor w = trunk.tensor();
    const double bytes = static_cast<double>(trunk.info.payload_bytes + trunk.info.scale_bytes);
    for (size_t tokens : {size_t{1}, size_t{64}}) {
        const std::vector<float> x = random_floats(tokens * cols, rng);
        std::vector<float> y(tokens * rows);
        TrunkInt8Input in;
        in.reserve(tokens, cols);
        const int reps = rows * cols * tokens > (1u << 24) ? 5 : 21;
        const Isa isa = active_isa();
        const double exact = median_ns([&] { matmul_rows(isa, w, x.data(), cols, tokens, y.data(), rows, 0, rows); }, reps);
        const double quantize = median_ns([&] { quantize_trunk_input(isa, trunk.info, x.data(), cols, tokens, in); }, reps);
        const double int8 = median_ns([&] { trunk_int8_rows(isa, w, in, y.data(), rows, 0, rows); }, reps);
        std::printf("KERNELSPEED trunk_int8 fmt=%s rows=%zu cols=%zu tokens=%zu isa=%s exact_ns=%.0f quantize_ns=%.0f int8_ns=%.0f "
                    "int8_GBps=%.2f speedup=%.2f\n",
                    format::trunk_format_name(fmt), rows, cols, tokens, isa_name(isa), exact, quantize, int8, bytes / int8,
                    exact / (quantize + int8));
    }
}

TEST(KernelSpeed, DISABLED_Trunk) {
    for (TrunkFormat fmt : {TrunkFormat::q4g, TrunkFormat::q8g, TrunkFormat::q3g, TrunkFormat::f32}) {
        bench_trunk(fmt, 1024, 1024);
        bench_trunk(fmt, 4096, 7168);
    }
    for (TrunkFormat fmt : {TrunkFormat::q4g, TrunkFormat::q8g}) {
        bench_trunk_int8(fmt, 1024, 1024);
        bench_trunk_int8(fmt, 32768, 1024);
    }
}

// Decode's one-thread kernels as decode meets them: their bytes streamed from
// DRAM, many copies walked in turn (hundreds of MB, far past the last-level
// cache), beside a plain read of the same copies — the kernels above reuse one
// matrix that, at these sizes, stays in L2 or L3. Reported, never asserted.
// `kernel(i)` runs over copy i; each figure is median_ns's of 7 whole walks.
template <typename Kernel>
void bench_streamed(const char* what, const std::vector<const uint8_t*>& copies, size_t bytes, Kernel kernel) {
    const double kernel_ns = median_ns([&] {
        for (size_t i = 0; i < copies.size(); ++i) kernel(i);
    }, 7);
    uint64_t sum = 0;
    const double read_ns = median_ns([&] {
        for (const uint8_t* c : copies)
            for (size_t o = 0; o + 8 <= bytes; o += 64) {  // a word of every line
                uint64_t v;
                std::memcpy(&v, c + o, 8);
                sum += v;
            }
    }, 7);
    volatile uint64_t keep = sum;
    (void)keep;
    const double total = static_cast<double>(bytes) * copies.size();
    std::printf("KERNELSPEED streamed %s copies=%zu MB=%.0f kernel_GBps=%.2f plain_read_GBps=%.2f\n", what, copies.size(),
                total / 1e6, total / kernel_ns, total / read_ns);
}

TEST(KernelSpeed, DISABLED_Streamed) {
    std::mt19937 rng(3);
    const Isa isa = active_isa();
    {  // the int8 apply over mid's gate matrices (VQ3R, 512 rows x 1024 columns): lookups/ns = GB/s of index bytes
        const VqCase c{"in", 128, 3, 256, 8, false, 512};
        const VqTableShape shape{c.positions, c.stages, c.entries, c.vec_dim};
        const std::vector<uint8_t> indices = random_indices(c, rng);
        const std::vector<uint8_t> scales = random_scales(c.rows, rng);
        const std::vector<float> table = random_floats(shape.floats(), rng);
        std::vector<int8_t> q(shape.floats());
        std::vector<float> block_scales(vq_int8_blocks(shape)), y(c.rows);
        quantize_vq_table_int8(shape, table.data(), q.data(), block_scales.data());
        const size_t slot = (indices.size() + 4095) / 4096 * 4096 + 3 * 4096;  // records a little apart, as cache slots are
        std::vector<uint8_t> pool((size_t{384} << 20) / slot * slot);
        std::vector<const uint8_t*> copies;
        for (size_t at = 0; at + slot <= pool.size(); at += slot) {
            std::memcpy(pool.data() + at, indices.data(), indices.size());
            copies.push_back(pool.data() + at);
        }
        std::shuffle(copies.begin(), copies.end(), rng);
        bench_streamed("int8_apply_mid_gate", copies, indices.size(), [&](size_t i) {
            apply_vq_table_int8(isa, shape, false, copies[i], scales.data(), q.data(), block_scales.data(), y.data(), 0, c.rows);
        });
    }
    // the int8 trunk product, one token: mid's LM head (Q8G) and a projection (Q4G)
    for (auto [fmt, row_count, count] :
         {std::tuple{TrunkFormat::q8g, size_t{32768}, size_t{8}}, {TrunkFormat::q4g, size_t{1024}, size_t{400}}}) {
        const size_t rows = row_count, cols = 1024;  // a plain variable: clang 14's lambdas cannot capture a binding
        const Trunk one = make_trunk(fmt, 128, rows, cols, rng);
        const std::vector<Trunk> all(count, one);
        std::vector<format::LoadedTensor> tensors;
        std::vector<const uint8_t*> copies;
        for (const Trunk& t : all) {
            tensors.push_back(t.tensor());
            copies.push_back(t.bytes.data());
        }
        const std::vector<float> x = random_floats(cols, rng);
        std::vector<float> y(rows);
        TrunkInt8Input in;
        in.reserve(1, cols);
        quantize_trunk_input(isa, one.info, x.data(), cols, 1, in);
        const std::string what = std::string("trunk_int8_") + format::trunk_format_name(fmt) + "_" + std::to_string(rows) + "x1024";
        bench_streamed(what.c_str(), copies, one.bytes.size(),
                       [&](size_t i) { trunk_int8_rows(isa, tensors[i], in, y.data(), rows, 0, rows); });
    }
}

}  // namespace
}  // namespace waste::kernels
