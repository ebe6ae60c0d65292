// compute_peak.h — the f32 multiply-add rate the CPU sustains with the
// kernels' instruction set, measured: the ceiling `waste bench` sets the
// engine's per-token multiply-adds against (docs/bench-log/decode-and-prefill.md,
// "Issue 19's first kernel work": where a token's time goes), as it sets its
// bytes against the measured memory bandwidth.
#pragma once

#include "kernels/isa.h"
#include "platform/thread_pool.h"

namespace waste::kernels {

// Multiply-adds per second over all of the pool's threads: each runs
// independent fused multiply-add chains in registers (enough of them to
// cover the instruction's latency on two FMA ports), no memory traffic;
// the best of `passes` timed passes. Isa::scalar counts one lane.
double measure_fma_peak(platform::ThreadPool& pool, Isa isa, int passes = 5);

}  // namespace waste::kernels
