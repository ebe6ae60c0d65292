// target_region.h — a region of code compiled for x86 instruction sets beyond
// the project's baseline, in both compilers that build it (GCC: release,
// cross builds; clang: the sanitizer presets).
//
//   WASTE_TARGET_BEGIN("avx512f,avx512bw")
//   ... functions, templates and lambdas that use those instructions ...
//   WASTE_TARGET_END
//
// Contract: every function defined between the two may use the named
// instructions, and none may be called unless the CPU runs them (the
// dispatch checks, kernels/isa.h). Code outside the region, including
// templates declared before it, keeps the baseline. GCC spells the region
// `#pragma GCC target`; clang ignores that pragma and needs
// `#pragma clang attribute`, so without this the clang builds compiled no
// SIMD variant at all and ran the scalar references everywhere.
#pragma once

#define WASTE_TARGET_PRAGMA(text) _Pragma(#text)

#if defined(__clang__)
#define WASTE_TARGET_BEGIN(features) \
    WASTE_TARGET_PRAGMA(clang attribute push(__attribute__((target(features))), apply_to = function))
#define WASTE_TARGET_END WASTE_TARGET_PRAGMA(clang attribute pop)
#else
#define WASTE_TARGET_BEGIN(features) WASTE_TARGET_PRAGMA(GCC push_options) WASTE_TARGET_PRAGMA(GCC target(features))
#define WASTE_TARGET_END WASTE_TARGET_PRAGMA(GCC pop_options)
#endif
