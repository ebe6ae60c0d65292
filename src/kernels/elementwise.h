// elementwise.h — rmsnorm and the activations over arrays, with the ISA
// variants (models.md §0). The scalar reference is math.h's functions,
// element by element; Isa::scalar runs exactly that.
//
// Precision of the SIMD variants against the reference (tests/elementwise_test.cpp):
// * rmsnorm: Σx² in f64 in vector lanes, then across them (another order
//   than the reference's sequential f64 sum; each x² is exact in f64, the
//   sums differ by ~n·2^-53 relative, far below f32): the f32 scale
//   1/sqrt(mean+eps) rounds to the same float or its neighbour, so each
//   output is within 2 ulp (the scale's ulp and the product's).
// * sigmoid, SiLU, SiTU: a vectorised expm1 (elementwise_simd.inc) in place
//   of std::exp/std::tanh, within 1 ulp of f64 truth as measured over f32's
//   range; sigmoid = 1/(2+expm1(−z)) and tanh(y) = sign(y)·(−e/(e+2)),
//   e = expm1(−2|y|), have no cancellation, so the relative error holds at 0
//   and at ±∞ (sigmoid measured within 2 ulp of truth, tanh within 2). Against
//   the reference's outputs the tests allow 4 ulp (sigmoid, gate), 8 (SiLU·b)
//   and 16 (SiTU: two tanh and a sigmoid), measured max 2, 4 and 7; where the
//   reference is subnormal the unit is 2^-126 (f32 exp itself overflows at
//   e^88.73 there). Large |z| saturate as the reference does (sigmoid → 0
//   or 1, tanh → ±1); NaN stays NaN.
// These errors are ~1e-7 relative per activation, two orders below the
// engine's 1e-5 budget against the PyTorch reference.
// Each element's result depends only on its inputs (tails use the same
// vector code, masked), never on n, the position or the thread, and rmsnorm's
// order depends only on n: thread counts give identical bits.
#pragma once

#include <cstddef>

#include "kernels/isa.h"
#include "kernels/math.h"

namespace waste::kernels {

// out = w ⊙ x / sqrt(mean(x²) + eps); w may be null; out may alias x.
void rmsnorm(Isa isa, const float* x, const float* w, float eps, size_t n, float* out);
// g[i] = act(g[i], u[i]) for i < n (the SwiGLU / SiTU-GLU of an FFN).
void glu(Isa isa, const GluActivation& act, float* g, const float* u, size_t n);
// x[i] *= sigmoid(gate[i]) for i < n (the output gates of KDA and MLA);
// gate may be x itself: silu(x) = x·σ(x), the reference's order.
void mul_sigmoid(Isa isa, float* x, const float* gate, size_t n);
// Σ a[i]·b[i] for i < n (MLA's attention scores and W_UV rows). The SIMD
// variants sum in lanes with FMA, then the lanes: within 2·γ_n·Σ|a·b|
// (γ_n ≈ n·2⁻²⁴) of the reference's sequential sum, the two orders' error
// bounds added; the order depends only on n.
float dot(Isa isa, const float* a, const float* b, size_t n);
// out[r] = dot(isa, a, b + r·stride, n) for r < rows, bit for bit (MLA's
// scores over its cache and its W_UV rows): the rows' sums interleave.
void dots(Isa isa, const float* a, const float* b, size_t stride, size_t rows, size_t n, float* out);
// y[i] += a·x[i] for i < n (attention's weighted sums of cached rows, MLA's
// W_UKᵀ q). The SIMD variants fuse the multiply-add: each element within
// half an ulp of |a·x[i]| of the reference's two roundings.
void axpy(Isa isa, float a, const float* x, float* y, size_t n);
// axpy(isa, a[r], x + r·stride, y, n) for r = 0 .. rows-1 in turn, bit for
// bit (attention's weighted sum of cached values: y stays in registers
// across the rows).
void axpys(Isa isa, const float* a, const float* x, size_t stride, size_t rows, float* y, size_t n);

// The variants' entry points (elementwise_x86.cpp, elementwise_neon.cpp);
// false when they have no kernel for the case.
bool rmsnorm_x86(Isa isa, const float* x, const float* w, float eps, size_t n, float* out);
bool glu_x86(Isa isa, const GluActivation& act, float* g, const float* u, size_t n);
bool mul_sigmoid_x86(Isa isa, float* x, const float* gate, size_t n);
bool dot_x86(Isa isa, const float* a, const float* b, size_t n, float* out);
bool axpy_x86(Isa isa, float a, const float* x, float* y, size_t n);
bool dots_x86(Isa isa, const float* a, const float* b, size_t stride, size_t rows, size_t n, float* out);
bool axpys_x86(Isa isa, const float* a, const float* x, size_t stride, size_t rows, float* y, size_t n);
bool rmsnorm_neon(const float* x, const float* w, float eps, size_t n, float* out);
bool glu_neon(const GluActivation& act, float* g, const float* u, size_t n);
bool mul_sigmoid_neon(float* x, const float* gate, size_t n);
bool dot_neon(const float* a, const float* b, size_t n, float* out);
bool axpy_neon(float a, const float* x, float* y, size_t n);
bool dots_neon(const float* a, const float* b, size_t stride, size_t rows, size_t n, float* out);
bool axpys_neon(const float* a, const float* x, size_t stride, size_t rows, float* y, size_t n);

}  // namespace waste::kernels
