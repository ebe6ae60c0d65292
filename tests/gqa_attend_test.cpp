// gqa_attend_test.cpp — the blocked grouped-query attention (model/gqa_attend.h)
// against the unblocked loop it replaces: one query head and one token at a
// time over its whole range of positions, with the same kernels.
//
// Tolerance: none — bit-identical outputs. The blocked version runs each
// (token, head)'s dots per row, its softmax and its ascending-order axpys
// exactly as the unblocked one does, only in another order across rows and
// heads, so any difference is a fault. Shapes: Qwen3's grouping (32 over 4,
// head_dim 128), multi-head (no grouping), head_dim around the vector widths
// (masked tails), decode steps and chunks across the token block and key
// block edges, a sliding window over a ring that wraps inside a chunk,
// gpt-oss's sinks; every ISA this CPU runs and 1, 2 and 3 threads.
//
// GqaAttendSpeed.DISABLED_* is a micro-benchmark, not a test: run it with
//   ./gqa_attend_test --gtest_also_run_disabled_tests --gtest_filter='GqaAttendSpeed.*'
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/elementwise.h"
#include "model/gqa_attend.h"

namespace waste::model {
namespace {

// The unblocked loop: for each head in [first_head, end_head), each token, its whole range.
void reference_attend(kernels::Isa isa, const GqaAttendShape& a, const float* q, const float* cache, size_t position,
                      size_t tokens, float* out, size_t first_head, size_t end_head) {
    const size_t d = a.head_dim, group = a.heads / a.kv_heads, kv_width = a.kv_heads * d;
    std::vector<float> scores(position + tokens);
    for (size_t h = first_head; h < end_head; ++h) {
        const size_t g = h / group;
        for (size_t t = 0; t < tokens; ++t) {
            const size_t n = position + t + 1, from = a.window && n > a.window ? n - a.window : 0;
            auto for_each_run = [&](auto&& body) {
                for (size_t p = from; p < n;) {
                    const size_t first = a.ring ? p % a.ring : p, length = a.ring ? std::min(n - p, a.ring - first) : n - p;
                    body(p, cache + first * a.row, length);
                    p += length;
                }
            };
            const float* qh = q + t * a.ld + h * d;
            for_each_run([&](size_t p, const float* rows, size_t length) {
                kernels::dots(isa, qh, rows + g * d, a.row, length, d, scores.data() + p);
            });
            float max_score = -INFINITY;
            for (size_t p = from; p < n; ++p) {
                scores[p] *= a.scale;
                max_score = std::max(max_score, scores[p]);
            }
            if (a.sinks) max_score = std::max(max_score, a.sinks[h]);
            double total = 0;
            for (size_t p = from; p < n; ++p) {
                scores[p] = std::exp(scores[p] - max_score);
                total += scores[p];
            }
            if (a.sinks) total += std::exp(a.sinks[h] - max_score);
            const float inv = static_cast<float>(1.0 / total);
            for (size_t p = from; p < n; ++p) scores[p] *= inv;
            float* oh = out + t * a.ld + h * d;
            std::fill(oh, oh + d, 0.0f);
            for_each_run([&](size_t p, const float* rows, size_t length) {
                kernels::axpys(isa, scores.data() + p, rows + kv_width + g * d, a.row, length, oh, d);
            });
        }
    }
}

struct Case {
    size_t heads, kv_heads, head_dim, window, position, tokens;
    bool sinks;
};

std::vector<kernels::Isa> runnable_isas() {
    std::vector<kernels::Isa> isas;
    for (kernels::Isa isa : {kernels::Isa::scalar, kernels::Isa::avx2, kernels::Isa::avx512, kernels::Isa::neon})
        if (kernels::isa_runs(isa)) isas.push_back(isa);
    return isas;
}

void check_case(const Case& c, unsigned seed) {
    GqaAttendShape a;
    a.heads = c.heads, a.kv_heads = c.kv_heads, a.head_dim = c.head_dim;
    a.row = 2 * c.kv_heads * c.head_dim + 3;  // a padded row: the stride is the shape's, not 2·kv_width
    a.ld = c.heads * c.head_dim + 5;
    a.window = c.window;
    // a sliding layer's ring: window + 63 rows (session_state.h); else every position has its row
    a.ring = c.window ? c.window + 63 : 0;
    a.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.5f);
    const size_t rows = a.ring ? a.ring : c.position + c.tokens;
    std::vector<float> cache(rows * a.row), q(c.tokens * a.ld), sinks(c.heads);
    for (float& v : cache) v = normal(rng);
    for (float& v : q) v = normal(rng);
    for (float& v : sinks) v = normal(rng);
    if (c.sinks) a.sinks = sinks.data();
    for (kernels::Isa isa : runnable_isas()) {
        std::vector<float> want(q.size(), -1.0f);
        reference_attend(isa, a, q.data(), cache.data(), c.position, c.tokens, want.data(), 0, c.heads);
        for (unsigned threads : {1u, 2u, 3u}) {
            platform::ThreadPool pool(threads);
            std::vector<float> got(q.size(), -1.0f);
            gqa_attend(isa, pool, a, q.data(), cache.data(), c.position, c.tokens, got.data());
            for (size_t t = 0; t < c.tokens; ++t)
                ASSERT_EQ(0, std::memcmp(want.data() + t * a.ld, got.data() + t * a.ld, sizeof(float) * c.heads * c.head_dim))
                    << kernels::isa_name(isa) << ", " << threads << " threads, heads " << c.heads << "/" << c.kv_heads
                    << ", head_dim " << c.head_dim << ", window " << c.window << ", position " << c.position
                    << ", token " << t << " of " << c.tokens;
        }
    }
}

TEST(GqaAttend, BlockedIsTheUnblockedLoopBitForBit) {
    const Case cases[] = {
        {32, 4, 128, 0, 0, 1, false},     // the first token
        {32, 4, 128, 0, 549, 1, false},   // a decode step at ~550 positions (Qwen3-30B-A3B)
        {32, 4, 128, 0, 0, 37, false},    // a prompt chunk: token blocks of 16, a partial one
        {32, 4, 128, 0, 100, 70, false},  // a later chunk, key blocks straddling the chunk
        {8, 8, 64, 0, 130, 5, false},     // no grouping
        {4, 1, 72, 0, 65, 9, false},      // one key/value head, a masked tail in every row
        {6, 2, 17, 0, 3, 20, false},      // head_dim below a vector
        {8, 2, 64, 128, 0, 64, true},     // gpt-oss: a sliding layer's first chunk, sinks
        {8, 2, 64, 128, 150, 64, true},   // its ring (191 rows) wraps inside the chunk
        {8, 2, 64, 128, 180, 1, true},    // a decode step over the window
        {8, 2, 64, 0, 40, 3, true},       // a full layer with sinks
    };
    unsigned seed = 1;
    for (const Case& c : cases) {
        check_case(c, seed++);
        if (HasFatalFailure()) return;
    }
}

// The decode step and a prompt chunk at Qwen3-30B-A3B's shape, both ways.
TEST(GqaAttendSpeed, DISABLED_Qwen3Shape) {
    GqaAttendShape a;
    a.heads = 32, a.kv_heads = 4, a.head_dim = 128, a.row = 2 * 4 * 128, a.ld = 32 * 128;
    a.scale = 1.0f / std::sqrt(128.0f);
    const kernels::Isa isa = kernels::active_isa();
    platform::ThreadPool pool(2);
    struct Shape {
        size_t position, tokens;
    };
    for (const Shape s : {Shape{549, 1}, Shape{1536, 1}, Shape{0, 512}, Shape{1536, 512}}) {
        std::mt19937 rng(7);
        std::normal_distribution<float> normal;
        std::vector<float> cache((s.position + s.tokens) * a.row), q(s.tokens * a.ld), out(q.size());
        for (float& v : cache) v = normal(rng);
        for (float& v : q) v = normal(rng);
        const int reps = s.tokens == 1 ? 200 : 2;
        auto time = [&](auto&& run) {
            run();
            const auto start = std::chrono::steady_clock::now();
            for (int r = 0; r < reps; ++r) run();
            return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() / reps;
        };
        const double blocked = time([&] { gqa_attend(isa, pool, a, q.data(), cache.data(), s.position, s.tokens, out.data()); });
        // the unblocked loop, over the pool's threads by head as gqa_layer ran it
        const double unblocked = time([&] {
            pool.parallel_for(a.heads, [&](size_t begin, size_t end) {
                reference_attend(isa, a, q.data(), cache.data(), s.position, s.tokens, out.data(), begin, end);
            });
        });
        std::printf("position %zu, %zu tokens: blocked %.3f ms, unblocked %.3f ms a layer\n", s.position, s.tokens,
                    blocked, unblocked);
    }
}

}  // namespace
}  // namespace waste::model
