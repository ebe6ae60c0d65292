// memory_bandwidth.h — the machine's sustained DRAM read bandwidth, measured
// now, so benchmarks can print their bytes per token beside the limit.
#pragma once

#include <cstddef>

#include "platform/thread_pool.h"

namespace waste::platform {

// Reads a buffer of `bytes` (default 512 MiB, far beyond any cache) a few
// times with every thread of the pool; returns the best pass in bytes/s.
double measure_read_bandwidth(ThreadPool& pool, size_t bytes = size_t{512} << 20, int passes = 5);

}  // namespace waste::platform
