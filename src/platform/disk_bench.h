// disk_bench.h — what the disk delivers for expert-sized direct reads.
//
// Writes a scratch file through OutputFile (O_DIRECT where allowed, so the
// write bypasses the page cache and the reads cannot be served from RAM —
// upstream once benchmarked RAM by mistake, docs/anchors.md), drops what the
// cache holds of it, then reads random record-aligned records through a
// DirectFile at a queue depth with an AsyncReader, and reports bandwidth and
// latency, and afterwards how much of the file is in the page cache (mincore;
// unknown on Windows). Also a sequential write figure from the same file.
// The file is removed.
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
    std::string backend;
    std::string io_mode;            // the reads' (DirectFile::io_mode_reason)
    std::string write_io_mode;      // the write's (OutputFile::io_mode_reason)
    uint64_t file_bytes = 0, record_bytes = 0, reads = 0, bytes_read = 0;
    unsigned depth = 0;
    double write_gb_per_s = 0;      // sequential write of the scratch file, fsync included
    double read_gb_per_s = 0;       // random record reads
    double reads_per_s = 0;
    double latency_p50_ms = 0, latency_p99_ms = 0;
    int64_t resident_pages_after = 0;   // pages of the file in the page cache afterwards; -1: the system cannot tell
};

DiskBenchResult run_disk_bench(const DiskBenchOptions& options);

}  // namespace waste::platform
