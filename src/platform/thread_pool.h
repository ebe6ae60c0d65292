// thread_pool.h — a fixed set of compute threads for data-parallel loops.
//
// parallel_for splits [0, n) into one contiguous slice per thread, always
// the same slices for the same n and thread count, and the caller's thread
// takes slice 0. Work inside a slice never depends on the split, so results
// are bit-identical for every thread count (tests/forward_test checks it).
// Workers spin briefly before sleeping: most regions in a decode step are
// microseconds long, and waking a sleeping thread costs more than that
// (upstream lost ~21% of a token to futex wake/park — docs/anchors.md).
// Slices are claimed, not assigned: whichever thread is running takes the
// next unclaimed slice, so a worker the OS has descheduled never stalls the
// caller (the slices, and so the bits, are the same whoever runs them).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace waste::platform {

// The most threads a pool starts, for "one per CPU" too; callers refuse
// more (WASTE_MAX_THREADS in waste.h says why 256).
inline constexpr unsigned max_pool_threads = 256;

// The threads a pool of `requested` threads runs: 0 = one per usable CPU,
// at most max_pool_threads. The memory plan counts per-thread buffers with it.
unsigned resolve_pool_threads(unsigned requested);

class ThreadPool {
public:
    explicit ThreadPool(unsigned threads);  // 0 = one per usable CPU, at most max_pool_threads
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    unsigned size() const { return static_cast<unsigned>(workers_.size()) + 1; }

    // Runs body(begin, end) over [0, n) split into size() slices, aligned to
    // `grain` elements; returns when all are done. Not reentrant.
    void parallel_for(size_t n, const std::function<void(size_t, size_t)>& body, size_t grain = 1);

private:
    void worker_loop();
    void run_slice(unsigned index);
    void claim_and_run();

    std::vector<std::thread> workers_;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::atomic<uint64_t> generation_{0};
    std::atomic<unsigned> next_slice_{0};     // next unclaimed slice
    std::atomic<unsigned> finished_slices_{0};
    std::atomic<unsigned> active_workers_{0};  // workers inside the current region
    std::atomic<bool> stopping_{false};
    const std::function<void(size_t, size_t)>* body_ = nullptr;
    size_t n_ = 0, grain_ = 1;
    std::exception_ptr error_;
    std::mutex error_mutex_;
};

}  // namespace waste::platform
