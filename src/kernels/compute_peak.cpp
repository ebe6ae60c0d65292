#include "kernels/compute_peak.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>

#if WASTE_X86_SIMD
#include <immintrin.h>
#endif
#if WASTE_NEON_SIMD
#include <arm_neon.h>
#endif

namespace waste::kernels {

namespace {

// Chains per thread: 4-cycle FMA latency × 2 ports needs at least 8 in
// flight; 12 leaves room for the loop's own instructions.
constexpr int chains = 12;
// Per pass and thread: chains × lanes × iterations multiply-adds, ~2 ms at
// 100 G/s a core.
constexpr uint64_t iterations = 1u << 20;

// x ← x·a + b with a = 1 − 2^-20 and b = 2^-30: stays finite and normal for
// any number of steps, so no denormal or overflow slows a lane.
constexpr float step_a = 1.0f - 0x1p-20f, step_b = 0x1p-30f;

float chains_scalar(uint64_t n) {
    float x[chains];
    for (int c = 0; c < chains; ++c) x[c] = 1.0f + static_cast<float>(c);
    for (uint64_t i = 0; i < n; ++i)
        for (float& v : x) v = v * step_a + step_b;  // std::fma is a library call without the FMA extension
    float s = 0;
    for (float v : x) s += v;
    return s;
}

#if WASTE_X86_SIMD
__attribute__((target("avx2,fma"))) float chains_avx2(uint64_t n) {
    __m256 x[chains];
    for (int c = 0; c < chains; ++c) x[c] = _mm256_set1_ps(1.0f + static_cast<float>(c));
    const __m256 a = _mm256_set1_ps(step_a), b = _mm256_set1_ps(step_b);
    for (uint64_t i = 0; i < n; ++i)
        for (__m256& v : x) v = _mm256_fmadd_ps(v, a, b);
    __m256 s = x[0];
    for (int c = 1; c < chains; ++c) s = _mm256_add_ps(s, x[c]);
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, s);
    return lanes[0];
}

__attribute__((target("avx512f"))) float chains_avx512(uint64_t n) {
    __m512 x[chains];
    for (int c = 0; c < chains; ++c) x[c] = _mm512_set1_ps(1.0f + static_cast<float>(c));
    const __m512 a = _mm512_set1_ps(step_a), b = _mm512_set1_ps(step_b);
    for (uint64_t i = 0; i < n; ++i)
        for (__m512& v : x) v = _mm512_fmadd_ps(v, a, b);
    __m512 s = x[0];
    for (int c = 1; c < chains; ++c) s = _mm512_add_ps(s, x[c]);
    alignas(64) float lanes[16];
    _mm512_store_ps(lanes, s);
    return lanes[0];
}
#endif

#if WASTE_NEON_SIMD
float chains_neon(uint64_t n) {
    float32x4_t x[chains];
    for (int c = 0; c < chains; ++c) x[c] = vdupq_n_f32(1.0f + static_cast<float>(c));
    const float32x4_t a = vdupq_n_f32(step_a), b = vdupq_n_f32(step_b);
    for (uint64_t i = 0; i < n; ++i)
        for (float32x4_t& v : x) v = vfmaq_f32(b, v, a);
    float32x4_t s = x[0];
    for (int c = 1; c < chains; ++c) s = vaddq_f32(s, x[c]);
    return vgetq_lane_f32(s, 0);
}
#endif

// Runs the chains for n steps; returns the lanes a step covers.
int run_chains(Isa isa, uint64_t n, float* sink) {
    switch (isa) {
#if WASTE_X86_SIMD
        case Isa::avx512: *sink = chains_avx512(n); return 16;
        case Isa::avx2: *sink = chains_avx2(n); return 8;
#endif
#if WASTE_NEON_SIMD
        case Isa::neon: *sink = chains_neon(n); return 4;
#endif
        default: *sink = chains_scalar(n); return 1;
    }
}

}  // namespace

double measure_fma_peak(platform::ThreadPool& pool, Isa isa, int passes) {
    const unsigned threads = pool.size();
    std::atomic<int> lanes{1};
    std::atomic<uint32_t> sink{0};
    double best = 0;
    for (int pass = 0; pass < passes; ++pass) {
        const auto start = std::chrono::steady_clock::now();
        pool.parallel_for(threads, [&](size_t begin, size_t end) {
            for (size_t t = begin; t < end; ++t) {
                float result = 0;
                lanes.store(run_chains(isa, iterations, &result), std::memory_order_relaxed);
                sink.fetch_add(static_cast<uint32_t>(result), std::memory_order_relaxed);
            }
        });
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        const double multiply_adds = static_cast<double>(threads) * chains * lanes.load() * static_cast<double>(iterations);
        best = std::max(best, multiply_adds / seconds);
    }
    volatile uint32_t keep = sink.load();  // the chains must not be optimised away
    (void)keep;
    return best;
}

}  // namespace waste::kernels
