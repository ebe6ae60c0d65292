#include "kernels/trunk_matmul.h"

#include <algorithm>
#include <vector>

#include "kernels/isa_kernels.h"
#include "kernels/isa_neon.h"
#include "kernels/trunk_matvec.h"
#include "platform/thread_scratch.h"

namespace waste::kernels {
namespace {

// The scalar reference: one decoded row against every token.
void matmul_rows_scalar(const format::LoadedTensor& w, const float* x, size_t ldx, size_t tokens, float* y, size_t ldy,
                        size_t row_begin, size_t row_end, float* row) {
    const size_t cols = w.info->cols;
    for (size_t r = row_begin; r < row_end; ++r) {
        w.row(r, std::span<float>(row, cols));
        for (size_t t = 0; t < tokens; ++t) {
            const float* xt = x + t * ldx;
            float acc = 0;
            for (size_t i = 0; i < cols; ++i) acc += row[i] * xt[i];
            y[t * ldy + r] = acc;
        }
    }
}

// Per-thread scratch for the decoded tile, grown once: no allocation per call.
float* tile_scratch(size_t floats) {
    return platform::thread_scratch(platform::ScratchSlot::trunk_tile, floats);
}

}  // namespace

void matmul_rows(Isa isa, const format::LoadedTensor& w, const float* x, size_t ldx, size_t tokens, float* y, size_t ldy,
                 size_t row_begin, size_t row_end) {
#if WASTE_X86_SIMD
    if (isa != Isa::scalar &&
        matmul_rows_x86(isa, w, x, ldx, tokens, y, ldy, row_begin, row_end, tile_scratch(matmul_tile_floats_x86(w))))
        return;
#endif
#if WASTE_NEON_SIMD
    if (isa == Isa::neon &&
        matmul_rows_neon(w, x, ldx, tokens, y, ldy, row_begin, row_end, tile_scratch(matmul_tile_floats_neon(w))))
        return;
#endif
    matmul_rows_scalar(w, x, ldx, tokens, y, ldy, row_begin, row_end, tile_scratch(w.info->cols));
}

void matmul(platform::ThreadPool& pool, const format::LoadedTensor& w, const float* x, size_t ldx, size_t tokens, float* y,
            size_t ldy) {
    const size_t rows = w.info->rows;
    if (tokens == 1 && ldy >= rows) {
        matvec(pool, w, x, y);
        return;
    }
    if (tokens == 1) {
        std::vector<float> out(rows);
        matvec(pool, w, x, out.data());
        std::copy(out.begin(), out.end(), y);
        return;
    }
    const Isa isa = active_isa();
    pool.parallel_for(rows, [&](size_t begin, size_t end) { matmul_rows(isa, w, x, ldx, tokens, y, ldy, begin, end); }, 8);
}

}  // namespace waste::kernels
