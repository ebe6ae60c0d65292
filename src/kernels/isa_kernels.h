// isa_kernels.h — entry points of the x86 SIMD kernel variants
// (kernels/isa_x86.cpp, compiled with per-function target attributes so the
// library still runs on a CPU without them).
#pragma once

#include <cstddef>

#include "format/container.h"
#include "kernels/trunk_matvec.h"

namespace waste::kernels {

// Returns false when this variant has no kernel for the tensor's format.
bool matvec_rows_x86(Isa isa, const format::LoadedTensor& w, const float* x, float* y, size_t row_begin,
                     size_t row_end);

}  // namespace waste::kernels
