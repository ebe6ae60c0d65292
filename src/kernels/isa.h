// isa.h — the instruction-set variants of the kernels and how one is chosen.
//
// Every kernel has a scalar reference that is always built; x86 adds AVX2+FMA
// and AVX-512 variants (kernels/isa_x86.cpp, compiled with per-function target
// attributes so the library still runs on a CPU without them). best_isa() is
// what the CPU runs; active_isa() is what the engine uses (WASTE_ISA may only
// lower it). Tests pass an Isa explicitly.
#pragma once

// The x86 SIMD variants are written in `#pragma GCC target` regions, which
// clang 14 does not honour; a clang build (the asan+ubsan preset) therefore
// compiles none of them and runs the scalar reference everywhere.
#if defined(__x86_64__) && !defined(__clang__)
#define WASTE_X86_SIMD 1
#else
#define WASTE_X86_SIMD 0
#endif

namespace waste::kernels {

enum class Isa { scalar, avx2, avx512 };
const char* isa_name(Isa isa);
Isa best_isa();    // what this CPU runs
Isa active_isa();  // what the kernels use (WASTE_ISA=scalar|avx2|avx512 may lower it)

}  // namespace waste::kernels
