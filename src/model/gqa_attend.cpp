// gqa_attend.cpp — grouped-query softmax attention over the cache, blocked
// for locality (contract in gqa_attend.h).
//
// A work item is one key/value head and a block of the chunk's tokens: its
// query heads × tokens score against the cache `key_block` rows at a time
// (those rows' keys, then values, copied together once for the whole group
// instead of read once per query head and token), then each (token, head)
// row takes its softmax, then the values are summed the same blocked way.
// Items are ordered key/value head first, so each thread's contiguous slice
// gets whole heads and an even share of the causal triangle.
#include "model/gqa_attend.h"

#include <algorithm>
#include <vector>

#include "kernels/elementwise.h"
#include "model/forward.h"
#include "platform/aligned_vector.h"
#include "platform/error.h"

namespace waste::model {
namespace {

constexpr size_t key_block = 64;                // cache rows a block: 64 × a head's 128 floats = 32 KiB of keys
constexpr size_t max_token_block = 16;          // tokens a work item
constexpr size_t scores_floats = size_t{1} << 18;  // a work item's scores aim under 1 MiB (a decode token's may exceed it)

}  // namespace

void gqa_attend(kernels::Isa isa, platform::ThreadPool& pool, const GqaAttendShape& a, const float* q,
                const float* cache, size_t position, size_t tokens, float* out) {
    const size_t d = a.head_dim, group = a.heads / a.kv_heads, kv_width = a.kv_heads * d;
    WASTE_CHECK(group * a.kv_heads == a.heads && 2 * kv_width <= a.row && a.heads * d <= a.ld);
    if (tokens == 0) return;
    // positions [from(t), end(t)) for token t of the chunk
    auto end = [&](size_t t) { return position + t + 1; };
    auto from = [&](size_t t) { return a.window && end(t) > a.window ? end(t) - a.window : size_t{0}; };
    // the slot of position p: a ring's row p % ring
    auto slot = [&](size_t p) { return a.ring ? p % a.ring : p; };
    const size_t widest = end(tokens - 1) - from(0);  // the most positions one item spans
    const size_t token_block = std::clamp<size_t>(scores_floats / (group * widest), 1, max_token_block);
    const size_t blocks = (tokens + token_block - 1) / token_block;
    pool.parallel_for(a.kv_heads * blocks, [&](size_t begin, size_t stop) {
        std::vector<float> scores;
        platform::LineAlignedVector<float> packed(key_block * d);
        for (size_t item = begin; item < stop; ++item) {
            const size_t g = item / blocks, t0 = item % blocks * token_block, t1 = std::min(tokens, t0 + token_block);
            const size_t base = from(t0), span = end(t1 - 1) - base, tb = t1 - t0;
            scores.resize(group * tb * span);
            // the scores row of (query head i of the group, token t0 + j), indexed by position − base
            auto row_of = [&](size_t i, size_t j) { return scores.data() + (i * tb + j) * span; };
            // (query head i of the group, token t0 + j)'s offset in q and out
            auto at = [&](size_t i, size_t j) { return (t0 + j) * a.ld + (g * group + i) * d; };
            // For each block of key_block positions: head g's keys (offset 0) or values
            // (offset kv_width) of those positions copied into `packed`, rows of d floats
            // (cache rows are kilobytes apart: a block read in place would fall
            // in a few L1 sets), then body(j, p, rows, length) for each token of
            // the item that reads any of them: positions [p, p + length) at rows.
            auto for_each_block = [&](size_t offset, auto&& body) {
                for (size_t pb = base; pb < base + span; pb += key_block) {
                    const size_t pe = std::min(pb + key_block, base + span);
                    for (size_t p = pb; p < pe; ++p)
                        std::copy_n(cache + slot(p) * a.row + offset + g * d, d, packed.data() + (p - pb) * d);
                    for (size_t j = 0; j < tb; ++j) {
                        const size_t lo = std::max(pb, from(t0 + j)), hi = std::min(pe, end(t0 + j));
                        if (lo < hi) body(j, lo, packed.data() + (lo - pb) * d, hi - lo);
                    }
                }
            };
            for_each_block(0, [&](size_t j, size_t p, const float* rows, size_t length) {
                for (size_t i = 0; i < group; ++i)
                    kernels::dots(isa, q + at(i, j), rows, d, length, d, row_of(i, j) + (p - base));
            });
            for (size_t i = 0; i < group; ++i)
                for (size_t j = 0; j < tb; ++j) {
                    const size_t lo = from(t0 + j);
                    softmax_weights(row_of(i, j) + (lo - base), end(t0 + j) - lo, a.scale,
                                    a.sinks ? a.sinks + g * group + i : nullptr);
                    std::fill(out + at(i, j), out + at(i, j) + d, 0.0f);
                }
            for_each_block(kv_width, [&](size_t j, size_t p, const float* rows, size_t length) {
                for (size_t i = 0; i < group; ++i)
                    kernels::axpys(isa, row_of(i, j) + (p - base), rows, d, length, out + at(i, j), d);
            });
        }
    });
}

}  // namespace waste::model
