#include "platform/memory_bandwidth.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <vector>

#include "platform/aligned_buffer.h"

namespace waste::platform {

namespace {

// target_clones makes an ifunc whose resolver runs while the dynamic loader
// relocates, before ThreadSanitizer's runtime is initialised; instrumented,
// that resolver crashed every tsan executable that links this file (in
// __tsan_func_entry). Under ThreadSanitizer the loop is compiled once.
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define WASTE_NO_TARGET_CLONES 1
#endif
#endif
// The clones are x86 ISAs; elsewhere (AArch64: Advanced SIMD is baseline)
// the loop is compiled once, vectorised for the target. Clones are ELF ifuncs:
// Windows executables have none, so there too.
#if !defined(__x86_64__) || defined(_WIN32)
#define WASTE_NO_TARGET_CLONES 1
#endif

// Sums 64-bit words; the compiler vectorises it for the running CPU.
#ifndef WASTE_NO_TARGET_CLONES
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
uint64_t sum_words(const uint64_t* words, size_t count) {
    uint64_t acc0 = 0, acc1 = 0, acc2 = 0, acc3 = 0;
    size_t i = 0;
    for (; i + 4 <= count; i += 4) {
        acc0 += words[i];
        acc1 += words[i + 1];
        acc2 += words[i + 2];
        acc3 += words[i + 3];
    }
    for (; i < count; ++i) acc0 += words[i];
    return acc0 + acc1 + acc2 + acc3;
}

}  // namespace

double measure_read_bandwidth(ThreadPool& pool, size_t bytes, int passes) {
    AlignedBuffer buffer(bytes);  // zero-filled: every page is touched before timing
    const size_t words = bytes / sizeof(uint64_t);
    const uint64_t* data = reinterpret_cast<const uint64_t*>(buffer.data());
    std::atomic<uint64_t> sink{0};
    double best = 0;
    for (int pass = 0; pass < passes; ++pass) {
        const auto start = std::chrono::steady_clock::now();
        pool.parallel_for(words, [&](size_t begin, size_t end) {
            sink.fetch_add(sum_words(data + begin, end - begin), std::memory_order_relaxed);
        }, 4096);
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        best = std::max(best, static_cast<double>(bytes) / seconds);
    }
    volatile uint64_t keep = sink.load();  // the sums must not be optimised away
    (void)keep;
    return best;
}

}  // namespace waste::platform
