#include "platform/thread_pool.h"
#include "platform/error.h"
#include "platform/library_thread.h"
#include "platform/system_memory.h"

#include <algorithm>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace waste::platform {
namespace {

inline void cpu_relax() {
#if defined(__x86_64__)
    _mm_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

constexpr int spin_iterations = 20000;  // ~50-100 us of spinning before sleeping

}  // namespace

// One thread per CPU this process may run on (usable_cpus): a process pinned
// with `taskset` or `waste --cpus` must not start more spinning threads than
// it has CPUs (hardware_concurrency counts the whole machine).
unsigned resolve_pool_threads(unsigned requested) {
    return requested == 0 ? std::min(usable_cpus(), max_pool_threads) : requested;
}

ThreadPool::ThreadPool(unsigned threads) {
    threads = resolve_pool_threads(threads);
    WASTE_CHECK(threads <= max_pool_threads);  // callers refuse more, naming the value
    for (unsigned i = 1; i < threads; ++i) workers_.push_back(start_library_thread([this] { worker_loop(); }));
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
        generation_.fetch_add(1);
    }
    wake_.notify_all();
    for (auto& worker : workers_) worker.join();
}

void ThreadPool::run_slice(unsigned index) {
    const unsigned slices = size();
    const size_t units = (n_ + grain_ - 1) / grain_;
    const size_t begin = std::min(n_, units * index / slices * grain_);
    const size_t end = std::min(n_, units * (index + 1) / slices * grain_);
    if (begin >= end) return;
    try {
        (*body_)(begin, end);
    } catch (...) {
        std::lock_guard lock(error_mutex_);
        if (!error_) error_ = std::current_exception();
    }
}

void ThreadPool::claim_and_run() {
    const unsigned slices = size();
    while (true) {
        const unsigned slice = next_slice_.fetch_add(1, std::memory_order_acq_rel);
        if (slice >= slices) return;
        run_slice(slice);
        finished_slices_.fetch_add(1, std::memory_order_acq_rel);
    }
}

void ThreadPool::worker_loop() {
    uint64_t seen = 0;
    while (true) {
        int spins = 0;
        while (generation_.load(std::memory_order_acquire) == seen && spins < spin_iterations) {
            cpu_relax();
            ++spins;
        }
        if (generation_.load(std::memory_order_acquire) == seen) {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
        }
        seen = generation_.load(std::memory_order_acquire);
        if (stopping_) return;
        active_workers_.fetch_add(1, std::memory_order_acq_rel);
        if (generation_.load(std::memory_order_acquire) == seen) claim_and_run();
        active_workers_.fetch_sub(1, std::memory_order_acq_rel);
    }
}

void ThreadPool::parallel_for(size_t n, const std::function<void(size_t, size_t)>& body, size_t grain) {
    if (n == 0) return;
    grain = std::max<size_t>(grain, 1);
    if (workers_.empty() || n <= grain) {
        body(0, n);
        return;
    }
    body_ = &body;
    n_ = n;
    grain_ = grain;
    error_ = nullptr;
    // finished_slices_ is reset before next_slice_ opens the slices. Incident:
    // in the other order a worker that had read the previous generation but
    // not yet joined it (active_workers_ still 0, so the previous region had
    // ended) could claim and finish a slice of this region between the two
    // stores; its count was then overwritten with 0 and the caller spun
    // forever waiting for the last slice.
    finished_slices_.store(0, std::memory_order_relaxed);
    next_slice_.store(0, std::memory_order_release);
    {
        std::lock_guard lock(mutex_);
        generation_.fetch_add(1, std::memory_order_acq_rel);
    }
    wake_.notify_all();
    claim_and_run();
    // Every slice is claimed; wait for those still running elsewhere, then for
    // workers to leave the region (they must not see the next one's state
    // half-written). Spin, then yield: a descheduled worker needs the CPU.
    int spins = 0;
    while (finished_slices_.load(std::memory_order_acquire) != size() ||
           active_workers_.load(std::memory_order_acquire) != 0) {
        if (++spins < spin_iterations) cpu_relax();
        else std::this_thread::yield();
    }
    body_ = nullptr;
    if (error_) std::rethrow_exception(error_);
}

}  // namespace waste::platform
