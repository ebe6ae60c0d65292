// elementwise.cpp — the dispatch of elementwise.h; the scalar reference is
// math.h's functions, element by element.
#include "kernels/elementwise.h"

namespace waste::kernels {

namespace {
bool x86(Isa isa) { return WASTE_X86_SIMD && (isa == Isa::avx2 || isa == Isa::avx512) && isa_runs(isa); }
bool neon(Isa isa) { return WASTE_NEON_SIMD && isa == Isa::neon; }
}  // namespace

void rmsnorm(Isa isa, const float* x, const float* w, float eps, size_t n, float* out) {
    if (x86(isa) && rmsnorm_x86(isa, x, w, eps, n, out)) return;
    if (neon(isa) && rmsnorm_neon(x, w, eps, n, out)) return;
    rmsnorm(x, w, eps, n, out);
}

void glu(Isa isa, const GluActivation& act, float* g, const float* u, size_t n) {
    if (x86(isa) && glu_x86(isa, act, g, u, n)) return;
    if (neon(isa) && glu_neon(act, g, u, n)) return;
    for (size_t i = 0; i < n; ++i) g[i] = act(g[i], u[i]);
}

void mul_sigmoid(Isa isa, float* x, const float* gate, size_t n) {
    if (x86(isa) && mul_sigmoid_x86(isa, x, gate, n)) return;
    if (neon(isa) && mul_sigmoid_neon(x, gate, n)) return;
    for (size_t i = 0; i < n; ++i) x[i] *= sigmoid(gate[i]);
}

float dot(Isa isa, const float* a, const float* b, size_t n) {
    float out = 0.0f;
    if (x86(isa) && dot_x86(isa, a, b, n, &out)) return out;
    if (neon(isa) && dot_neon(a, b, n, &out)) return out;
    for (size_t i = 0; i < n; ++i) out += a[i] * b[i];
    return out;
}

void dots(Isa isa, const float* a, const float* b, size_t stride, size_t rows, size_t n, float* out) {
    if (x86(isa) && dots_x86(isa, a, b, stride, rows, n, out)) return;
    if (neon(isa) && dots_neon(a, b, stride, rows, n, out)) return;
    for (size_t r = 0; r < rows; ++r) out[r] = dot(isa, a, b + r * stride, n);
}

void axpy(Isa isa, float a, const float* x, float* y, size_t n) {
    if (x86(isa) && axpy_x86(isa, a, x, y, n)) return;
    if (neon(isa) && axpy_neon(a, x, y, n)) return;
    for (size_t i = 0; i < n; ++i) y[i] += rounded(a * x[i]);
}

void axpys(Isa isa, const float* a, const float* x, size_t stride, size_t rows, float* y, size_t n) {
    if (x86(isa) && axpys_x86(isa, a, x, stride, rows, y, n)) return;
    if (neon(isa) && axpys_neon(a, x, stride, rows, y, n)) return;
    for (size_t r = 0; r < rows; ++r) axpy(isa, a[r], x + r * stride, y, n);
}

#if !WASTE_X86_SIMD
bool rmsnorm_x86(Isa, const float*, const float*, float, size_t, float*) { return false; }
bool glu_x86(Isa, const GluActivation&, float*, const float*, size_t) { return false; }
bool mul_sigmoid_x86(Isa, float*, const float*, size_t) { return false; }
bool dot_x86(Isa, const float*, const float*, size_t, float*) { return false; }
bool axpy_x86(Isa, float, const float*, float*, size_t) { return false; }
bool dots_x86(Isa, const float*, const float*, size_t, size_t, size_t, float*) { return false; }
bool axpys_x86(Isa, const float*, const float*, size_t, size_t, float*, size_t) { return false; }
#endif
#if !WASTE_NEON_SIMD
bool rmsnorm_neon(const float*, const float*, float, size_t, float*) { return false; }
bool glu_neon(const GluActivation&, float*, const float*, size_t) { return false; }
bool mul_sigmoid_neon(float*, const float*, size_t) { return false; }
bool dot_neon(const float*, const float*, size_t, float*) { return false; }
bool axpy_neon(float, const float*, float*, size_t) { return false; }
bool dots_neon(const float*, const float*, size_t, size_t, size_t, float*) { return false; }
bool axpys_neon(const float*, const float*, size_t, size_t, float*, size_t) { return false; }
#endif

}  // namespace waste::kernels
