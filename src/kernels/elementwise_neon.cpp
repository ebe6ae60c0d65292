// elementwise_neon.cpp — the AArch64 NEON variant of elementwise.h: the
// bodies are elementwise_simd.inc over kernels/elementwise_neon_v.inc's
// vector type (which the test also compiles over SIMDe). Precision:
// elementwise.h. On every other target this file compiles to nothing.
#include "kernels/elementwise.h"

#if WASTE_NEON_SIMD

#include <arm_neon.h>

#include <cmath>
#include <cstring>

namespace waste::kernels {

namespace neon_elementwise {
#include "kernels/elementwise_neon_v.inc"
#include "kernels/elementwise_simd.inc"
}  // namespace neon_elementwise

bool rmsnorm_neon(const float* x, const float* w, float eps, size_t n, float* out) {
    neon_elementwise::rmsnorm_simd(x, w, eps, n, out);
    return true;
}

bool glu_neon(const GluActivation& act, float* g, const float* u, size_t n) {
    neon_elementwise::glu_simd(act, g, u, n);
    return true;
}

bool mul_sigmoid_neon(float* x, const float* gate, size_t n) {
    neon_elementwise::mul_sigmoid_simd(x, gate, n);
    return true;
}

bool dot_neon(const float* a, const float* b, size_t n, float* out) {
    *out = neon_elementwise::dot_simd(a, b, n);
    return true;
}

bool dots_neon(const float* a, const float* b, size_t stride, size_t rows, size_t n, float* out) {
    neon_elementwise::dots_simd(a, b, stride, rows, n, out);
    return true;
}

bool axpys_neon(const float* a, const float* x, size_t stride, size_t rows, float* y, size_t n) {
    neon_elementwise::axpys_simd(a, x, stride, rows, y, n);
    return true;
}

bool axpy_neon(float a, const float* x, float* y, size_t n) {
    neon_elementwise::axpy_simd(a, x, y, n);
    return true;
}

}  // namespace waste::kernels

#endif  // WASTE_NEON_SIMD
