#include "platform/disk_bench.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>
#include <vector>

#include "platform/aligned_buffer.h"
#include "platform/error.h"

namespace waste::platform {

uint64_t resident_pages(int fd, uint64_t bytes) {
    if (bytes == 0) return 0;
    void* map = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) fail(WASTE_ERR_IO, "mmap for mincore failed: {}", std::strerror(errno));
    const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    std::vector<unsigned char> vec((bytes + page - 1) / page);
    const int result = ::mincore(map, bytes, vec.data());
    const int error_number = errno;
    ::munmap(map, bytes);
    if (result != 0) fail(WASTE_ERR_IO, "mincore failed: {}", std::strerror(error_number));
    uint64_t resident = 0;
    for (unsigned char v : vec) resident += v & 1u;
    return resident;
}

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

    std::string path = o.directory + "/waste-diskbench-XXXXXX";
    std::vector<char> name(path.begin(), path.end());
    name.push_back('\0');
    int fd = ::mkstemp(name.data());
    if (fd < 0) fail(WASTE_ERR_IO, "diskbench: cannot create a scratch file in {}: {}", o.directory, std::strerror(errno));
    ::close(fd);
    path = name.data();
    struct Remove {
        std::string path;
        ~Remove() { ::unlink(path.c_str()); }
    } remove_file{path};

    // 1. sequential direct write of incompressible bytes
    fd = ::open(path.c_str(), O_WRONLY | O_DIRECT | O_CLOEXEC);
    r.io_mode = "O_DIRECT";
    if (fd < 0 && errno == EINVAL) {
        fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
        r.io_mode = "buffered (the filesystem refused O_DIRECT)";
    }
    if (fd < 0) fail(WASTE_ERR_IO, "diskbench: cannot open {}: {}", path, std::strerror(errno));
    const uint64_t chunk = uint64_t{8} << 20;
    AlignedBuffer data(chunk);
    std::mt19937_64 random(o.seed);
    for (size_t i = 0; i < chunk / 8; ++i) {
        const uint64_t word = random();
        std::memcpy(data.data() + 8 * i, &word, 8);
    }
    auto start = Clock::now();
    for (uint64_t done = 0; done < r.file_bytes;) {
        const uint64_t n = std::min(chunk, r.file_bytes - done);
        const ssize_t wrote = ::pwrite(fd, data.data(), n, static_cast<off_t>(done));
        if (wrote <= 0) {
            ::close(fd);
            fail(WASTE_ERR_IO, "diskbench: write to {} failed: {}", path, std::strerror(errno));
        }
        done += static_cast<uint64_t>(wrote);
    }
    ::fdatasync(fd);
    r.write_gb_per_s = r.file_bytes / std::chrono::duration<double>(Clock::now() - start).count() / 1e9;
    ::close(fd);

    // 2. random record reads, direct, at the queue depth
    fd = ::open(path.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC);
    if (fd < 0) fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail(WASTE_ERR_IO, "diskbench: cannot reopen {}: {}", path, std::strerror(errno));
    struct Close {
        int fd;
        ~Close() { ::close(fd); }
    } close_file{fd};
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    auto reader = make_async_reader(o.backend, r.depth, o.pread_threads);
    r.backend = io_backend_name(reader->backend());
    AlignedBuffer buffers(r.depth * o.record_bytes);
    std::vector<Clock::time_point> issued(r.depth);
    std::vector<double> latencies;
    std::uniform_int_distribution<uint64_t> pick(0, records - 1);  // the stream only needs to be random, not portable
    auto issue = [&](unsigned slot) {
        issued[slot] = Clock::now();
        reader->submit(ReadRequest{fd, pick(random) * o.record_bytes, buffers.data() + slot * o.record_bytes,
                                   static_cast<uint32_t>(o.record_bytes), slot});
    };
    start = Clock::now();
    for (unsigned slot = 0; slot < r.depth; ++slot) issue(slot);
    const auto deadline = start + std::chrono::duration<double>(o.seconds);
    ReadCompletion done;
    while (reader->wait(&done)) {
        if (done.error) fail(WASTE_ERR_IO, "diskbench: read failed: {}", std::strerror(done.error));
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
    r.resident_pages_after = resident_pages(fd, r.file_bytes);
    return r;
}

}  // namespace waste::platform
