// kda_step.h — the KDA recurrence of one head over a run of tokens
// (models.md §1): per token, with the head's state S [D keys][D values],
//   S ← diag(f) S;  u = β (v − Sᵀk);  S += k uᵀ;  o = Sᵀ q.
// A decode step is a run of one token; prefill passes the chunk's tokens.
//
// Every variant gives the scalar reference's bits: each state element sees
// the same multiplies and adds in the same order (columns side by side in
// vector lanes, products rounded before they are added — never an FMA), and
// each u_j and o_j is summed over the keys i in ascending order. The SIMD
// variants also fuse token t's update and readout with token t+1's decay and
// Sᵀk (one sweep over S per token instead of two), which reorders nothing
// per element. So placement, threads and ISA never change these bits.
#pragma once

#include <cstddef>

#include "kernels/isa.h"

namespace waste::kernels {

// The inputs of one head: token t's q, k, v, decay factor f (= e^g) and
// output start at `t * ld` from their pointers, its β at beta[t * beta_stride].
struct KdaHeadRun {
    const float* q = nullptr;
    const float* k = nullptr;
    const float* v = nullptr;
    const float* decay = nullptr;
    const float* beta = nullptr;
    float* out = nullptr;  // o (before the output norm and gate)
    size_t ld = 0, beta_stride = 0, tokens = 0;
};

// Largest head dimension (a bound on the caller's scratch and on bad input).
inline constexpr size_t kda_max_head_dim = 4096;  // as the config reader's bound

// `state`: d·d floats, updated in place; `scratch`: kda_scratch_floats(d).
inline constexpr size_t kda_scratch_floats(size_t d) { return 2 * d; }
void kda_head_run(Isa isa, float* state, size_t d, const KdaHeadRun& run, float* scratch);

// The variants' entry points (kernels/kda_step_x86.cpp, kda_step_neon.cpp);
// false when they have no kernel for the case (the caller runs the scalar
// reference, which gives the same bits).
bool kda_head_run_x86(Isa isa, float* state, size_t d, const KdaHeadRun& run, float* scratch);
bool kda_head_run_neon(float* state, size_t d, const KdaHeadRun& run, float* scratch);

}  // namespace waste::kernels
