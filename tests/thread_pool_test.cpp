// thread_pool_test.cpp — platform::ThreadPool: every index of a region is
// run exactly once, in the same slices for the same size and thread count,
// an exception in a slice reaches the caller and leaves the pool usable,
// and many short regions back to back (the decode step's pattern: regions
// of microseconds, workers spinning between them) all complete. Run under
// ThreadSanitizer by the tsan preset, which is where the region hand-over
// between the caller and the workers is checked for races.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <utility>
#include <vector>

#include "platform/thread_pool.h"

namespace {

using waste::platform::ThreadPool;

TEST(ThreadPool, EveryIndexRunsExactlyOnceInTheSameSlices) {
    for (unsigned threads : {1u, 2u, 3u, 4u}) {
        ThreadPool pool(threads);
        ASSERT_EQ(pool.size(), threads);
        for (size_t n : {size_t{1}, size_t{2}, size_t{7}, size_t{64}, size_t{1000}, size_t{4097}}) {
            for (size_t grain : {size_t{1}, size_t{16}, size_t{4096}}) {
                std::vector<std::atomic<int>> runs(n);
                std::vector<std::pair<size_t, size_t>> slices(threads + 1, {0, 0});
                std::atomic<unsigned> slice_count{0};
                pool.parallel_for(n, [&](size_t begin, size_t end) {
                    for (size_t i = begin; i < end; ++i) runs[i].fetch_add(1);
                    slices[slice_count.fetch_add(1)] = {begin, end};
                }, grain);
                for (size_t i = 0; i < n; ++i) ASSERT_EQ(runs[i].load(), 1) << "index " << i << " of " << n;
                ASSERT_LE(slice_count.load(), threads);
                // slices are aligned to the grain except at the end
                for (unsigned s = 0; s < slice_count.load(); ++s) {
                    EXPECT_EQ(slices[s].first % grain, 0u);
                    EXPECT_TRUE(slices[s].second % grain == 0 || slices[s].second == n);
                }
            }
        }
    }
}

TEST(ThreadPool, AnExceptionReachesTheCallerAndThePoolStaysUsable) {
    ThreadPool pool(3);
    EXPECT_THROW(pool.parallel_for(300, [](size_t begin, size_t) {
        if (begin >= 100) throw std::runtime_error("slice failed");
    }), std::runtime_error);
    std::atomic<size_t> sum{0};
    pool.parallel_for(300, [&](size_t begin, size_t end) {
        for (size_t i = begin; i < end; ++i) sum.fetch_add(i);
    });
    EXPECT_EQ(sum.load(), 300u * 299u / 2);
}

TEST(ThreadPool, ManyShortRegionsBackToBackAllComplete) {
    // 20,000 regions of a few nanoseconds each: workers are often still
    // leaving one region as the caller opens the next (the hand-over the
    // tsan preset watches). Each region writes plain (non-atomic) memory that
    // the caller then reads: the pool must order the two.
    ThreadPool pool(3);
    std::vector<uint64_t> cells(3, 0);
    uint64_t expected = 0;
    for (int region = 0; region < 20000; ++region) {
        pool.parallel_for(3, [&](size_t begin, size_t end) {
            for (size_t i = begin; i < end; ++i) cells[i] += static_cast<uint64_t>(region);
        });
        expected += static_cast<uint64_t>(region);
        ASSERT_EQ(cells[0] + cells[1] + cells[2], 3 * expected) << "region " << region;
    }
}

}  // namespace
