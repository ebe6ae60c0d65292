#include "kernels/isa_kernels.h"

namespace waste::kernels {

// The SIMD variants come with the speed work; until then every ISA uses the
// scalar reference (returns false = "no variant for this format").
bool matvec_rows_x86(Isa, const format::LoadedTensor&, const float*, float*, size_t, size_t) { return false; }

}  // namespace waste::kernels
