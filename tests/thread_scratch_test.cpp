// thread_scratch_test.cpp — platform::thread_scratch: each buffer is 64-byte
// aligned and at least the size asked, the same buffer while no larger size
// is asked, its own per slot and per thread, and threads that used it exit
// cleanly. On Windows its buffers hang from a fiber-local-storage slot freed
// at thread exit (the Windows stage runs this under Wine): that replaced
// thread_local vectors whose destructors faulted at thread exit under MinGW.
#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <thread>
#include <vector>

#include "platform/thread_scratch.h"

namespace {

using waste::platform::ScratchSlot;
using waste::platform::thread_scratch;

bool line_aligned(const float* p) { return reinterpret_cast<uintptr_t>(p) % 64 == 0; }

TEST(ThreadScratch, AlignedLargeEnoughAndKeptUntilItGrows) {
    float* first = thread_scratch(ScratchSlot::trunk_tile, 100);
    ASSERT_TRUE(line_aligned(first));
    for (int i = 0; i < 100; ++i) first[i] = static_cast<float>(i);
    EXPECT_EQ(thread_scratch(ScratchSlot::trunk_tile, 50), first) << "a smaller request keeps the buffer";
    EXPECT_EQ(thread_scratch(ScratchSlot::trunk_tile, 100), first);
    float* grown = thread_scratch(ScratchSlot::trunk_tile, 1 << 20);
    ASSERT_TRUE(line_aligned(grown));
    grown[(1 << 20) - 1] = 1.0f;  // the whole size is there (ASan checks the write)
    EXPECT_TRUE(line_aligned(thread_scratch(ScratchSlot::trunk_tile, 0)));
}

TEST(ThreadScratch, EachSlotAndEachThreadHasItsOwnBuffer) {
    std::set<const float*> seen;
    for (unsigned s = 0; s < static_cast<unsigned>(ScratchSlot::count); ++s)
        seen.insert(thread_scratch(static_cast<ScratchSlot>(s), 64));
    EXPECT_EQ(seen.size(), static_cast<size_t>(ScratchSlot::count));
    const float* other = nullptr;
    std::thread([&] { other = thread_scratch(ScratchSlot::vq_tile, 64); }).join();
    EXPECT_EQ(seen.count(other), 0u) << "another thread's buffer is not this thread's";
}

TEST(ThreadScratch, ManyThreadsUseItAndExitCleanly) {
    // Rounds of threads that each fill every slot with their own values, check
    // them, and exit (their buffers freed at exit); a fault or a shared buffer
    // fails here.
    for (int round = 0; round < 8; ++round) {
        std::vector<std::thread> threads;
        std::vector<int> intact(16, 0);
        for (int t = 0; t < 16; ++t)
            threads.emplace_back([&, t] {
                const float mark = static_cast<float>(round * 100 + t);
                std::vector<float*> buffers;
                for (unsigned s = 0; s < static_cast<unsigned>(ScratchSlot::count); ++s) {
                    float* b = thread_scratch(static_cast<ScratchSlot>(s), 4096 * (s + 1));
                    for (size_t i = 0; i < 4096 * (s + 1); ++i) b[i] = mark + static_cast<float>(s);
                    buffers.push_back(b);
                }
                std::this_thread::yield();
                bool ok = true;
                for (unsigned s = 0; s < buffers.size(); ++s)
                    for (size_t i = 0; i < 4096 * (s + 1); ++i) ok = ok && buffers[s][i] == mark + static_cast<float>(s);
                intact[t] = ok;
            });
        for (auto& thread : threads) thread.join();
        for (int t = 0; t < 16; ++t) EXPECT_TRUE(intact[t]) << "round " << round << ", thread " << t;
    }
}

}  // namespace
