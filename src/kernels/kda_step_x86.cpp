// kda_step_x86.cpp — the AVX2 and AVX-512 variants of the KDA recurrence
// (kda_step.h), each in a `#pragma GCC target` region: the dispatch in
// kda_step.cpp calls one only when the CPU runs it.
//
// Both give the scalar reference's bits (tests/kda_step_test.cpp checks it):
// a column block of S is swept row by row with the block's u and o
// accumulators held in registers, so each u_j and o_j is still summed over
// the keys i in ascending order; every product is materialised (WASTE_KEEP)
// before it is added, so nothing is contracted into an FMA. A sweep finishes
// token t (S += k uᵀ, o += S q) and starts token t+1 (S ← diag(f) S,
// u' += S k) on each element while it is in a register: one pass over S per
// token, the same operations per element in the same order.
#include "kernels/kda_step.h"

#if WASTE_X86_SIMD

#include <immintrin.h>

#include "platform/target_region.h"

#include <utility>

// GCC 12 warns inside its own AVX-512 headers (_mm512_undefined_* used as
// the pass-through of unmasked intrinsics): a known false positive.
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)  // a GCC-only warning
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace waste::kernels {

namespace {

// u = β (v − u) over the head's columns; a subtract then a multiply, which
// no contraction can fuse, so plain code gives the reference's bits.
inline void finish_u(float* u, const float* v, float b, size_t d) {
    for (size_t j = 0; j < d; ++j) u[j] = b * (v[j] - u[j]);
}

// A call's first sweep (Start only) finds S cold: between decode steps the
// rest of the model streams through the caches (mid: 512 KB of state a
// layer). Its first column block prefetches the rows 16 on, every line of
// them, into L1, and the next head's rows follow on from the last ones (the
// heads' states lie back to back); the hardware's prefetchers had followed
// the walk's row stride poorly (the gain: docs/bench-log/llama-cpp-kimi.md,
// "Scales, cold state and the nibble span"). Later sweeps find S in L1 or L2.
constexpr size_t cold_rows_ahead = 16;

inline void prefetch_row(const float* state, size_t d, size_t i) {
    for (size_t at = 0; at < d; at += 16) _mm_prefetch(reinterpret_cast<const char*>(state + i * d + at), _MM_HINT_T0);
}

// The token loop shared by both variants: `Sweep<Finish, Start>` does one
// pass over S (see the file comment).
template <template <bool, bool> class Sweep>
void run_tokens(float* state, size_t d, const KdaHeadRun& run, float* scratch) {
    float* started = scratch;       // Sᵀk of the token being started, then its u
    float* finishing = scratch + d;  // u of the token being finished
    Sweep<false, true>::run(state, d, nullptr, nullptr, nullptr, nullptr, run.decay, run.k, started);
    for (size_t t = 0; t < run.tokens; ++t) {
        const size_t base = t * run.ld;
        finish_u(started, run.v + base, run.beta[t * run.beta_stride], d);
        std::swap(started, finishing);
        if (t + 1 < run.tokens) {
            const size_t next = base + run.ld;
            Sweep<true, true>::run(state, d, run.k + base, run.q + base, finishing, run.out + base, run.decay + next,
                                   run.k + next, started);
        } else {
            Sweep<true, false>::run(state, d, run.k + base, run.q + base, finishing, run.out + base, nullptr, nullptr,
                                    nullptr);
        }
    }
}

WASTE_TARGET_BEGIN("avx2")

// AVX2 without FMA in the target: no product can be contracted.
template <bool Finish, bool Start>
struct SweepAvx2 {
    static constexpr size_t W = 8, B = 2;  // 16 columns a block: 6 accumulators + 4 broadcasts in 16 registers
    static void run(float* state, size_t d, const float* kf, const float* qf, const float* uf, float* of, const float* fs,
                    const float* ks, float* us) {
        const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        for (size_t j0 = 0; j0 < d; j0 += W * B) {
            __m256i m[B];
            __m256 uin[B], o[B], u[B];
#pragma GCC unroll 4
            for (size_t b = 0; b < B; ++b) {
                const size_t j = j0 + b * W;
                const int left = j >= d ? 0 : static_cast<int>(d - j < W ? d - j : W);
                m[b] = _mm256_cmpgt_epi32(_mm256_set1_epi32(left), lane);
                uin[b] = Finish ? _mm256_maskload_ps(uf + j, m[b]) : _mm256_setzero_ps();
                o[b] = _mm256_setzero_ps();
                u[b] = _mm256_setzero_ps();
            }
            for (size_t i = 0; i < d; ++i) {
                float* row = state + i * d + j0;
                if (!Finish && Start && j0 == 0) prefetch_row(state, d, i + cold_rows_ahead);
                const __m256 kfi = _mm256_set1_ps(Finish ? kf[i] : 0.0f), qfi = _mm256_set1_ps(Finish ? qf[i] : 0.0f);
                const __m256 fsi = _mm256_set1_ps(Start ? fs[i] : 0.0f), ksi = _mm256_set1_ps(Start ? ks[i] : 0.0f);
#pragma GCC unroll 4
                for (size_t b = 0; b < B; ++b) {
                    __m256 r = _mm256_maskload_ps(row + b * W, m[b]);
                    if (Finish) {
                        r = _mm256_add_ps(r, _mm256_mul_ps(kfi, uin[b]));
                        o[b] = _mm256_add_ps(o[b], _mm256_mul_ps(r, qfi));
                    }
                    if (Start) {
                        r = _mm256_mul_ps(r, fsi);
                        u[b] = _mm256_add_ps(u[b], _mm256_mul_ps(r, ksi));
                    }
                    _mm256_maskstore_ps(row + b * W, m[b], r);
                }
            }
#pragma GCC unroll 4
            for (size_t b = 0; b < B; ++b) {
                if (Finish) _mm256_maskstore_ps(of + j0 + b * W, m[b], o[b]);
                if (Start) _mm256_maskstore_ps(us + j0 + b * W, m[b], u[b]);
            }
        }
    }
};

WASTE_TARGET_END

WASTE_TARGET_BEGIN("avx512f")

// AVX-512F implies FMA in GCC's target model, so each product is kept.
#define WASTE_KEEP(v) __asm__("" : "+v"(v))

template <bool Finish, bool Start>
struct SweepAvx512 {
    static constexpr size_t W = 16, B = 4;  // 64 columns a block: 12 accumulators in registers
    static void run(float* state, size_t d, const float* kf, const float* qf, const float* uf, float* of, const float* fs,
                    const float* ks, float* us) {
        for (size_t j0 = 0; j0 < d; j0 += W * B) {
            __mmask16 m[B];
            __m512 uin[B], o[B], u[B];
#pragma GCC unroll 4
            for (size_t b = 0; b < B; ++b) {
                const size_t j = j0 + b * W;
                m[b] = j >= d ? 0 : d - j >= W ? 0xFFFF : static_cast<__mmask16>((1u << (d - j)) - 1);
                uin[b] = Finish ? _mm512_maskz_loadu_ps(m[b], uf + j) : _mm512_setzero_ps();
                o[b] = _mm512_setzero_ps();
                u[b] = _mm512_setzero_ps();
            }
            for (size_t i = 0; i < d; ++i) {
                float* row = state + i * d + j0;
                if (!Finish && Start && j0 == 0) prefetch_row(state, d, i + cold_rows_ahead);
                const __m512 kfi = _mm512_set1_ps(Finish ? kf[i] : 0.0f), qfi = _mm512_set1_ps(Finish ? qf[i] : 0.0f);
                const __m512 fsi = _mm512_set1_ps(Start ? fs[i] : 0.0f), ksi = _mm512_set1_ps(Start ? ks[i] : 0.0f);
#pragma GCC unroll 4
                for (size_t b = 0; b < B; ++b) {
                    __m512 r = _mm512_maskz_loadu_ps(m[b], row + b * W);
                    if (Finish) {
                        __m512 p = _mm512_mul_ps(kfi, uin[b]);
                        WASTE_KEEP(p);
                        r = _mm512_add_ps(r, p);
                        __m512 p2 = _mm512_mul_ps(r, qfi);
                        WASTE_KEEP(p2);
                        o[b] = _mm512_add_ps(o[b], p2);
                    }
                    if (Start) {
                        r = _mm512_mul_ps(r, fsi);
                        __m512 p = _mm512_mul_ps(r, ksi);
                        WASTE_KEEP(p);
                        u[b] = _mm512_add_ps(u[b], p);
                    }
                    _mm512_mask_storeu_ps(row + b * W, m[b], r);
                }
            }
#pragma GCC unroll 4
            for (size_t b = 0; b < B; ++b) {
                if (Finish) _mm512_mask_storeu_ps(of + j0 + b * W, m[b], o[b]);
                if (Start) _mm512_mask_storeu_ps(us + j0 + b * W, m[b], u[b]);
            }
        }
    }
};

#undef WASTE_KEEP
WASTE_TARGET_END

}  // namespace

bool kda_head_run_x86(Isa isa, float* state, size_t d, const KdaHeadRun& run, float* scratch) {
    if (isa == Isa::avx512) run_tokens<SweepAvx512>(state, d, run, scratch);
    else if (isa == Isa::avx2) run_tokens<SweepAvx2>(state, d, run, scratch);
    else return false;
    return true;
}

}  // namespace waste::kernels

#endif  // WASTE_X86_SIMD
