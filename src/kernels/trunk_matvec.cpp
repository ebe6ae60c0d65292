#include "kernels/trunk_matvec.h"

#include <cstdlib>
#include <cstring>
#include <string>

#include "format/f16.h"
#include "kernels/isa_kernels.h"
#include "kernels/isa_neon.h"
#include "platform/error.h"

#if WASTE_X86_SIMD
#include <cpuid.h>
#endif

namespace waste::kernels {

using format::TrunkFormat;

const char* isa_name(Isa isa) {
    switch (isa) {
        case Isa::scalar: return "scalar";
        case Isa::avx2: return "avx2";
        case Isa::avx512: return "avx512";
        case Isa::neon: return "neon";
    }
    return "?";
}

#if WASTE_X86_SIMD
namespace {
// CPUID leaf 1, ECX bit 29 (clang 14's __builtin_cpu_supports does not know "f16c").
bool cpu_has_f16c() {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
}
}  // namespace
#endif

Isa best_isa() {
#if WASTE_X86_SIMD
    static const Isa isa = [] {
        __builtin_cpu_init();
        // the AVX-512 variant also uses AVX2, FMA and F16C (every AVX-512 CPU has them)
        if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
            __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("fma") && cpu_has_f16c())
            return Isa::avx512;
        if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c())
            return Isa::avx2;
        return Isa::scalar;
    }();
    return isa;
#elif WASTE_NEON_SIMD
    return Isa::neon;  // Advanced SIMD is part of every AArch64 CPU
#else
    return Isa::scalar;
#endif
}

bool isa_runs(Isa isa) {
    const Isa best = best_isa();
    switch (isa) {
        case Isa::scalar: return true;
        case Isa::avx2: return best == Isa::avx2 || best == Isa::avx512;
        case Isa::avx512: return best == Isa::avx512;
        case Isa::neon: return best == Isa::neon;
    }
    return false;
}

Isa active_isa() {
    static const Isa isa = [] {
        const Isa best = best_isa();
        const char* forced = std::getenv("WASTE_ISA");
        if (!forced) return best;
        // only ever lowered: a name this CPU cannot run (or an unknown one) keeps the best
        const std::string name = forced;
        if (name == "scalar") return Isa::scalar;
        if (name == "avx2" && isa_runs(Isa::avx2)) return Isa::avx2;
        return best;
    }();
    return isa;
}

namespace {

void matvec_rows_scalar(const format::LoadedTensor& w, const float* x, float* y, size_t row_begin, size_t row_end) {
    const format::TrunkTensor& t = *w.info;
    const size_t cols = t.cols, group = t.group;
    for (size_t r = row_begin; r < row_end; ++r) {
        const uint8_t* row = w.payload.data() + r * t.row_stride;
        if (t.fmt == TrunkFormat::f32) {
            const float* values = reinterpret_cast<const float*>(row);
            float acc = 0;
            for (size_t i = 0; i < cols; ++i) acc += values[i] * x[i];
            y[r] = acc;
            continue;
        }
        const uint8_t* scales = w.scales.data() + r * t.groups_per_row * 2;
        float total = 0;
        for (size_t g = 0; g < t.groups_per_row; ++g) {
            const size_t begin = g * group, end = std::min(cols, begin + group);
            float acc = 0;
            for (size_t i = begin; i < end; ++i) {
                int q;
                if (t.fmt == TrunkFormat::q8g) q = static_cast<int8_t>(row[i]);
                else if (t.fmt == TrunkFormat::q4g) q = static_cast<int>((row[i / 2] >> ((i & 1) * 4)) & 0xF) - 8;
                else {
                    const size_t bit = 3 * i;
                    const unsigned pair = row[bit / 8] | (static_cast<unsigned>(row[bit / 8 + 1]) << 8);
                    q = static_cast<int>((pair >> (bit % 8)) & 7u) - 4;
                }
                acc += static_cast<float>(q) * x[i];
            }
            total += format::f16_at(scales, g) * acc;
        }
        y[r] = total;
    }
}

}  // namespace

void matvec_rows(Isa isa, const format::LoadedTensor& w, const float* x, float* y, size_t row_begin, size_t row_end) {
#if WASTE_X86_SIMD
    if (isa != Isa::scalar && matvec_rows_x86(isa, w, x, y, row_begin, row_end)) return;
#endif
#if WASTE_NEON_SIMD
    if (isa == Isa::neon && matvec_rows_neon(w, x, y, row_begin, row_end)) return;
#endif
    matvec_rows_scalar(w, x, y, row_begin, row_end);
}

void dequantize_rows(Isa isa, const format::LoadedTensor& w, size_t row_begin, size_t n, float* out, size_t ld) {
    const size_t cols = w.info->cols;
    WASTE_CHECK(ld >= cols && row_begin + n <= w.info->rows);
#if WASTE_X86_SIMD
    // the SIMD body writes whole vectors of 8: rows of a multiple of 8 only
    if (cols % 8 == 0 && dequantize_rows_x86(isa, w, row_begin, n, out, ld)) return;
#else
    (void)isa;
#endif
    for (size_t k = 0; k < n; ++k) w.row(row_begin + k, std::span<float>(out + k * ld, cols));
}

void matvec(platform::ThreadPool& pool, const format::LoadedTensor& w, const float* x, float* y) {
    const Isa isa = active_isa();
    const size_t rows = w.info->rows;
    // Small matrices are not worth a parallel region.
    if (rows * w.info->cols < 32768) {
        matvec_rows(isa, w, x, y, 0, rows);
        return;
    }
    pool.parallel_for(rows, [&](size_t begin, size_t end) { matvec_rows(isa, w, x, y, begin, end); }, 16);
}

void accumulate_rows(const format::LoadedTensor& w, size_t row_begin, size_t n, const float* coeff, float* y,
                     float* row_scratch) {
    const size_t cols = w.info->cols;
    for (size_t i = 0; i < n; ++i) {
        w.row(row_begin + i, std::span<float>(row_scratch, cols));
        const float c = coeff[i];
        for (size_t j = 0; j < cols; ++j) y[j] += c * row_scratch[j];
    }
}

}  // namespace waste::kernels
