#include "kernels/trunk_matmul.h"

#include <algorithm>
#include <vector>

#include "kernels/trunk_matvec.h"

namespace waste::kernels {
namespace {

// One decoded row against every token. target_clones lets the compiler
// vectorise this loop for the CPU it runs on (the summation order, and so the
// last bits, may differ between ISAs; never between thread counts).
__attribute__((target_clones("avx512f", "avx2", "default")))
void dot_tokens(const float* row, size_t cols, const float* x, size_t ldx, size_t tokens, float* y, size_t ldy, size_t r) {
    for (size_t t = 0; t < tokens; ++t) {
        const float* xt = x + t * ldx;
        float acc = 0;
        for (size_t i = 0; i < cols; ++i) acc += row[i] * xt[i];
        y[t * ldy + r] = acc;
    }
}

}  // namespace

void matmul(platform::ThreadPool& pool, const format::LoadedTensor& w, const float* x, size_t ldx, size_t tokens, float* y,
            size_t ldy) {
    const size_t rows = w.info->rows, cols = w.info->cols;
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
    pool.parallel_for(rows, [&](size_t begin, size_t end) {
        std::vector<float> row(cols);
        for (size_t r = begin; r < end; ++r) {
            w.row(r, row);
            dot_tokens(row.data(), cols, x, ldx, tokens, y, ldy, r);
        }
    }, 8);
}

}  // namespace waste::kernels
