// memory_bandwidth.h — the machine's sustained DRAM read bandwidth, measured
// now, so benchmarks can print their bytes per token beside the limit.
#pragma once

#include <cstddef>

#include "platform/thread_pool.h"

namespace waste::platform {

// 512 MiB: far beyond any last-level cache.
constexpr size_t default_bandwidth_buffer_bytes = size_t{512} << 20;
// Below 1 MiB the buffer sits in L2 and the figure means nothing for DRAM.
constexpr size_t min_bandwidth_buffer_bytes = size_t{1} << 20;

// Reads a buffer of `bytes` a few times with every thread of the pool;
// returns the best pass in bytes/s. The buffer is freed before it returns
// (it is resident only while measuring: callers under a RAM budget size it
// to fit, cli/cmd_bench.cpp).
double measure_read_bandwidth(ThreadPool& pool, size_t bytes = default_bandwidth_buffer_bytes, int passes = 5);

}  // namespace waste::platform
