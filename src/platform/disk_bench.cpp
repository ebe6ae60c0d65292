#include "platform/disk_bench.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <random>
#include <vector>

#include "platform/aligned_buffer.h"
#include "platform/direct_file.h"
#include "platform/error.h"
#include "platform/output_file.h"
#include "platform/utf8_path.h"

namespace waste::platform {

DiskBenchResult run_disk_bench(const DiskBenchOptions& o) {
    using Clock = std::chrono::steady_clock;
    constexpr uint64_t block = 4096;
    if (o.record_bytes == 0 || o.record_bytes % block != 0)
        fail(WASTE_ERR_INVALID_ARGUMENT, "diskbench: record size {} is not a positive multiple of 4096", o.record_bytes);
    if (o.record_bytes > (uint64_t{1} << 30)) fail(WASTE_ERR_INVALID_ARGUMENT, "diskbench: record size {} is over 1 GiB", o.record_bytes);
    const uint64_t records = o.file_bytes / o.record_bytes;
    if (records < 2) fail(WASTE_ERR_INVALID_ARGUMENT, "diskbench: file of {} bytes holds fewer than two records", o.file_bytes);
    DiskBenchResult r;
    r.record_bytes = o.record_bytes;
    r.file_bytes = records * o.record_bytes;
    r.depth = std::max(1u, o.depth);

    // 1. sequential direct write of incompressible bytes, published as a
    // file of its own (OutputFile: path.tmp, then renamed), removed at the end
    std::random_device entropy;
    const std::string path = fmt::format("{}/waste-diskbench-{:08x}", o.directory, entropy());
    struct Remove {
        std::string path;
        ~Remove() {
            std::error_code ignored;
            std::filesystem::remove(utf8_path(path), ignored);
        }
    } remove_file{path};
    const uint64_t chunk = uint64_t{8} << 20;
    AlignedBuffer data(chunk);
    std::mt19937_64 random(o.seed);
    for (size_t i = 0; i < chunk / 8; ++i) {
        const uint64_t word = random();
        std::memcpy(data.data() + 8 * i, &word, 8);
    }
    auto start = Clock::now();
    {
        OutputFileOptions write_options;
        write_options.buffer_bytes = chunk;
        OutputFile scratch(path, write_options);
        for (uint64_t done = 0; done < r.file_bytes;) {
            const uint64_t n = std::min(chunk, r.file_bytes - done);
            scratch.write({data.data(), static_cast<size_t>(n)});
            done += n;
        }
        scratch.commit();
        r.write_io_mode = scratch.io_mode_reason();
    }
    r.write_gb_per_s = r.file_bytes / std::chrono::duration<double>(Clock::now() - start).count() / 1e9;

    // 2. random record reads, direct, at the queue depth
    const DirectFile file(path, true);
    r.io_mode = file.io_mode_reason();
    drop_cached_pages(file.native());
    auto reader = make_async_reader(o.backend, r.depth, o.pread_threads);
    r.backend = io_backend_name(reader->backend());
    AlignedBuffer buffers(r.depth * o.record_bytes);
    std::vector<Clock::time_point> issued(r.depth);
    std::vector<double> latencies;
    std::uniform_int_distribution<uint64_t> pick(0, records - 1);  // the stream only needs to be random, not portable
    auto issue = [&](unsigned slot) {
        issued[slot] = Clock::now();
        reader->submit(ReadRequest{file.native(), pick(random) * o.record_bytes, buffers.data() + slot * o.record_bytes,
                                   static_cast<uint32_t>(o.record_bytes), slot});
    };
    start = Clock::now();
    for (unsigned slot = 0; slot < r.depth; ++slot) issue(slot);
    const auto deadline = start + std::chrono::duration<double>(o.seconds);
    ReadCompletion done;
    while (reader->wait(&done)) {
        if (done.error) fail(WASTE_ERR_IO, "diskbench: read failed: {}", system_error_text(done.error));
        latencies.push_back(std::chrono::duration<double>(Clock::now() - issued[done.tag]).count() * 1e3);
        ++r.reads;
        r.bytes_read += done.bytes;
        if (Clock::now() < deadline) issue(static_cast<unsigned>(done.tag));
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    r.read_gb_per_s = r.bytes_read / seconds / 1e9;
    r.reads_per_s = r.reads / seconds;
    std::sort(latencies.begin(), latencies.end());
    if (!latencies.empty()) {
        r.latency_p50_ms = latencies[latencies.size() / 2];
        r.latency_p99_ms = latencies[std::min(latencies.size() - 1, latencies.size() * 99 / 100)];
    }
    r.resident_pages_after = cached_pages(file.native(), r.file_bytes);
    return r;
}

}  // namespace waste::platform
