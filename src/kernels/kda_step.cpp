// kda_step.cpp — the scalar reference of the KDA recurrence (kda_step.h) and
// the dispatch to the ISA variants.
#include "kernels/kda_step.h"

#include <algorithm>

#include "platform/error.h"

namespace waste::kernels {

namespace {

// The reference: two passes over S per token, exactly the formulas' order.
// `rounded` keeps each product a product (no FMA contraction), as the SIMD
// variants do.
void kda_head_run_scalar(float* state, size_t d, const KdaHeadRun& run, float* scratch) {
    float* u = scratch;
    for (size_t t = 0; t < run.tokens; ++t) {
        const size_t base = t * run.ld;
        const float* kh = run.k + base;
        const float* qh = run.q + base;
        const float* vh = run.v + base;
        const float* factor = run.decay + base;
        float* oh = run.out + base;
        std::fill(u, u + d, 0.0f);
        for (size_t i = 0; i < d; ++i) {
            float* row = state + i * d;
            const float f = factor[i], ki = kh[i];
            for (size_t j = 0; j < d; ++j) {
                row[j] = rounded(row[j] * f);
                u[j] += rounded(row[j] * ki);
            }
        }
        const float b = run.beta[t * run.beta_stride];
        for (size_t j = 0; j < d; ++j) u[j] = b * (vh[j] - u[j]);
        std::fill(oh, oh + d, 0.0f);
        for (size_t i = 0; i < d; ++i) {
            float* row = state + i * d;
            const float ki = kh[i], qi = qh[i];
            for (size_t j = 0; j < d; ++j) {
                row[j] += rounded(ki * u[j]);
                oh[j] += rounded(row[j] * qi);
            }
        }
    }
}

}  // namespace

void kda_head_run(Isa isa, float* state, size_t d, const KdaHeadRun& run, float* scratch) {
    WASTE_CHECK(d >= 1 && d <= kda_max_head_dim && run.ld >= d);
    if (run.tokens == 0) return;
#if WASTE_X86_SIMD
    if ((isa == Isa::avx2 || isa == Isa::avx512) && isa_runs(isa) && kda_head_run_x86(isa, state, d, run, scratch)) return;
#endif
#if WASTE_NEON_SIMD
    if (isa == Isa::neon && kda_head_run_neon(state, d, run, scratch)) return;
#endif
    kda_head_run_scalar(state, d, run, scratch);
}

}  // namespace waste::kernels
