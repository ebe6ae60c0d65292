// disk_bench.h — what the disk delivers for expert-sized direct reads.
//
// Writes a scratch file with O_DIRECT (so the write bypasses the page cache
// and the reads cannot be served from RAM — upstream once benchmarked RAM by
// mistake, docs/anchors.md), checks with mincore that none of it is
// resident, then reads random record-aligned records with O_DIRECT at a queue
// depth through an AsyncReader, and reports bandwidth and latency. Also a
// sequential O_DIRECT write figure from the same file. The file is removed.
#pragma once

#include <cstdint>
#include <string>

#include "platform/async_reader.h"

namespace waste::platform {

struct DiskBenchOptions {
    std::string directory;          // where the scratch file goes
    uint64_t file_bytes = uint64_t{2} << 30;
    uint64_t record_bytes = 598016; // the `mid` preset's expert record; K3's is 11.83 MB
    unsigned depth = 8;             // reads in flight
    IoBackend backend = IoBackend::io_uring;
    unsigned pread_threads = 0;     // pread backend only (0 = min(depth, 4))
    double seconds = 5;             // read phase length
    uint32_t seed = 1;
};

struct DiskBenchResult {
    std::string backend, io_mode;
    uint64_t file_bytes = 0, record_bytes = 0, reads = 0, bytes_read = 0;
    unsigned depth = 0;
    double write_gb_per_s = 0;      // sequential O_DIRECT write of the scratch file
    double read_gb_per_s = 0;       // random record reads
    double reads_per_s = 0;
    double latency_p50_ms = 0, latency_p99_ms = 0;
    uint64_t resident_pages_after = 0;  // mincore: pages of the file in the page cache afterwards
};

DiskBenchResult run_disk_bench(const DiskBenchOptions& options);

// Pages of [offset, offset+bytes) of an open file that are in the page cache.
uint64_t resident_pages(int fd, uint64_t bytes);

}  // namespace waste::platform
