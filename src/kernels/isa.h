// isa.h — the instruction-set variants of the kernels and how one is chosen.
//
// Every kernel has a scalar reference that is always built; x86 adds AVX2+FMA
// and AVX-512 variants (kernels/isa_x86.cpp, compiled with per-function target
// attributes so the library still runs on a CPU without them), AArch64 a NEON
// variant (kernels/isa_neon.cpp; Advanced SIMD is part of every AArch64 CPU).
// best_isa() is what the CPU runs; active_isa() is what the engine uses
// (WASTE_ISA may only lower it). Tests pass an Isa explicitly.
#pragma once

// The x86 SIMD variants are written in target regions
// (platform/target_region.h), which GCC and clang both compile.
#if defined(__x86_64__)
#define WASTE_X86_SIMD 1
#else
#define WASTE_X86_SIMD 0
#endif

// The NEON bodies read packed indices and quantised rows as little-endian
// words (as the x86 ones do), so big-endian AArch64 runs the scalar reference.
#if defined(__aarch64__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define WASTE_NEON_SIMD 1
#else
#define WASTE_NEON_SIMD 0
#endif

namespace waste::kernels {

// `v`, rounded to f32 where it stands: the compiler may not contract it into
// a following add as one FMA. GCC contracts across statements by default in
// C++ (-ffp-contract=fast) wherever the target has FMA — every AArch64 CPU —
// and the bit-exact VQ table build (vq_lut.h) forbids it. The project's x86
// build targets baseline x86-64 (no FMA outside the SIMD regions), so there
// it is the value itself and the code is what it was (an x86 build with
// -mfma would need the same barrier).
inline float rounded(float v) {
#if defined(__GNUC__) && defined(__aarch64__)
    __asm__("" : "+w"(v));
#endif
    return v;
}

enum class Isa { scalar, avx2, avx512, neon };
const char* isa_name(Isa isa);
Isa best_isa();        // what this CPU runs
bool isa_runs(Isa isa);  // can this CPU run that variant? (scalar: always)
Isa active_isa();      // what the kernels use (WASTE_ISA=scalar, or avx2 on an AVX-512 CPU, lowers it)

}  // namespace waste::kernels
