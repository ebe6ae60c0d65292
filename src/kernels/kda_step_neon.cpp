// kda_step_neon.cpp — the AArch64 NEON variant of the KDA recurrence
// (kda_step.h); the body is kda_step_neon.inc, which the test also compiles
// over SIMDe. On every other target this file compiles to nothing.
#include "kernels/kda_step.h"

#if WASTE_NEON_SIMD

#include <arm_neon.h>

namespace waste::kernels {

namespace neon_kda {
// "w": the value stays in a SIMD&FP register, rounded, so it cannot be fused
// into the next add.
#define WASTE_KEEP(v) __asm__("" : "+w"(v))
#include "kernels/kda_step_neon.inc"
#undef WASTE_KEEP
}  // namespace neon_kda

bool kda_head_run_neon(float* state, size_t d, const KdaHeadRun& run, float* scratch) {
    return neon_kda::kda_head_run(state, d, run, scratch);
}

}  // namespace waste::kernels

#endif  // WASTE_NEON_SIMD
