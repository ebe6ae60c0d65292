#include "platform/output_file.h"
#include "platform/library_thread.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "platform/error.h"

namespace waste::platform {
namespace {

constexpr uint64_t block = 4096;  // direct-I/O alignment of offsets, sizes and buffers

uint64_t round_up(uint64_t value, uint64_t multiple) { return (value + multiple - 1) / multiple * multiple; }

}  // namespace

OutputFile::OutputFile(std::string path, OutputFileOptions options)
    : path_(std::move(path)), tmp_path_(path_ + ".tmp"), options_(options) {
    options_.buffer_bytes = std::max<size_t>(block, round_up(options_.buffer_bytes, block));
    options_.buffers = std::max(1, options_.buffers);
    const int flags = O_WRONLY | O_CREAT | O_CLOEXEC;  // no O_TRUNC: path.tmp is emptied once it is ours
    if (options_.want_direct) {
        fd_ = ::open(tmp_path_.c_str(), flags | O_DIRECT, 0644);
        if (fd_ >= 0) {
            direct_ = true;
            reason_ = "O_DIRECT";
        } else if (errno == EINVAL) {
            reason_ = "buffered: the filesystem refused O_DIRECT at open (EINVAL)";
        } else {
            fail_io("creating " + tmp_path_, errno);
        }
    } else {
        reason_ = "buffered by request";
    }
    if (fd_ < 0) fd_ = ::open(tmp_path_.c_str(), flags, 0644);
    if (fd_ < 0) fail_io("creating " + tmp_path_, errno);
    buffers_.reserve(static_cast<size_t>(options_.buffers));
    try {
        lock_temporary();
        if (::ftruncate(fd_, 0) != 0) fail_io("emptying " + tmp_path_, errno);
        take_buffer();
    } catch (...) {  // the destructor does not run for a half-built object
        ::close(fd_);
        if (lock_fd_ >= 0) {  // path.tmp is ours only when locked
            ::unlink(tmp_path_.c_str());
            ::close(lock_fd_);
        }
        throw;
    }
}

// One writer per temporary. Two processes writing the same target at the
// same moment (two `--learn` runs) would otherwise share path.tmp and could
// publish a mix of both; so path.tmp is locked (flock, on a descriptor of
// its own, so that the checked close of fd_ is still the writer's last close)
// from here until it is renamed or removed, and a second writer fails
// cleanly. The lock dies with its process: a killed writer's stale path.tmp
// is simply reused.
void OutputFile::lock_temporary() {
    lock_fd_ = ::open(tmp_path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (lock_fd_ < 0) fail_io("opening " + tmp_path_ + " to lock it", errno);
    if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
        const int error_number = errno;
        ::close(lock_fd_);
        lock_fd_ = -1;
        if (error_number == EWOULDBLOCK)
            fail(WASTE_ERR_IO, "cannot write {}: another writer is writing it ({} is locked; nothing was published)",
                 path_, tmp_path_);
        fail_io("locking " + tmp_path_, error_number);
    }
    // The other writer may have renamed path.tmp (published it) between our
    // open and our lock: then we hold a lock on its file, not on path.tmp.
    struct stat ours {}, named {};
    if (::fstat(fd_, &ours) != 0 || ::stat(tmp_path_.c_str(), &named) != 0 || ours.st_ino != named.st_ino ||
        ours.st_dev != named.st_dev) {
        ::close(lock_fd_);
        lock_fd_ = -1;
        fail(WASTE_ERR_IO, "cannot write {}: another writer published it while this one started; nothing was published",
             path_);
    }
}

AlignedBuffer BufferPool::acquire(size_t bytes) {
    {
        std::lock_guard lock(mutex_);
        for (size_t i = 0; i < kept_.size(); ++i) {
            if (kept_[i].size() != bytes) continue;
            AlignedBuffer buffer = std::move(kept_[i]);
            kept_.erase(kept_.begin() + static_cast<ptrdiff_t>(i));
            return buffer;
        }
    }
    return AlignedBuffer(bytes);
}

void BufferPool::release(AlignedBuffer buffer) {
    std::lock_guard lock(mutex_);
    if (kept_.size() < max_kept_) kept_.push_back(std::move(buffer));
}

// A new buffer becomes current; only the caller's thread changes buffers_'s
// size, within the capacity reserved at construction (no reallocation under
// the writer thread, which only uses the data pointers in its jobs).
void OutputFile::take_buffer() {
    WASTE_CHECK(buffers_.size() < buffers_.capacity());
    buffers_.push_back(options_.pool ? options_.pool->acquire(options_.buffer_bytes) : AlignedBuffer(options_.buffer_bytes));
    current_ = static_cast<int>(buffers_.size()) - 1;
}

void OutputFile::release_buffers() {
    if (options_.pool)
        for (AlignedBuffer& buffer : buffers_) options_.pool->release(std::move(buffer));
    buffers_.clear();
}

OutputFile::~OutputFile() {
    if (thread_.joinable()) {
        {
            std::lock_guard lock(mutex_);
            stopping_ = !commit_started_;  // abandoned: skip the writes left; a started commit's tail completes
        }
        changed_.notify_all();
        thread_.join();
    }
    release_buffers();
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(tmp_path_.c_str());  // still locked: nobody else can be writing it
    if (lock_fd_ >= 0) ::close(lock_fd_);
}

void OutputFile::write(std::span<const uint8_t> bytes) {
    WASTE_CHECK(!commit_started_);
    while (!bytes.empty()) {
        const size_t take = std::min(bytes.size(), options_.buffer_bytes - fill_);
        std::memcpy(buffers_[current_].data() + fill_, bytes.data(), take);
        fill_ += take;
        size_ += take;
        bytes = bytes.subspan(take);
        if (fill_ == options_.buffer_bytes) submit_current();
    }
}

void OutputFile::write_zeros(uint64_t count) {
    WASTE_CHECK(!commit_started_);
    while (count > 0) {
        const size_t take = static_cast<size_t>(std::min<uint64_t>(count, options_.buffer_bytes - fill_));
        std::memset(buffers_[current_].data() + fill_, 0, take);
        fill_ += take;
        size_ += take;
        count -= take;
        if (fill_ == options_.buffer_bytes) submit_current();
    }
}

std::span<uint8_t> OutputFile::claim(size_t bytes) {
    WASTE_CHECK(!commit_started_);
    if (bytes > options_.buffer_bytes) return {};
    if (fill_ + bytes > options_.buffer_bytes) {
        // A partly filled buffer may be handed on only if it ends on a block
        // boundary: the next one must start 4096-aligned for direct I/O.
        if (fill_ % block != 0) return {};
        if (fill_ > 0) submit_current();
    }
    return {buffers_[current_].data() + fill_, bytes};
}

void OutputFile::advance(size_t bytes) {
    WASTE_CHECK(fill_ + bytes <= options_.buffer_bytes);
    fill_ += bytes;
    size_ += bytes;
    if (fill_ == options_.buffer_bytes) submit_current();
}

void OutputFile::start_thread_locked() {
    if (!thread_.joinable()) thread_ = start_library_thread([this] { writer_loop(); });
}

void OutputFile::submit_current() {
    std::unique_lock lock(mutex_);
    if (!error_.empty()) throw Error(WASTE_ERR_IO, error_);
    start_thread_locked();
    jobs_.push_back(Job{current_, buffers_[current_].data(), flushed_, fill_, false});
    flushed_ += fill_;
    fill_ = 0;
    changed_.notify_all();
    // The next buffer: a free one, a new one while fewer than options_.buffers
    // exist, else wait for the writer to hand one back.
    if (free_.empty() && static_cast<int>(buffers_.size()) < options_.buffers) {
        lock.unlock();
        take_buffer();
        return;
    }
    changed_.wait(lock, [this] { return !free_.empty() || !error_.empty(); });
    if (!error_.empty()) throw Error(WASTE_ERR_IO, error_);
    current_ = free_.back();
    free_.pop_back();
}

void OutputFile::start_commit() {
    WASTE_CHECK(!commit_started_);
    std::lock_guard lock(mutex_);
    if (!error_.empty()) throw Error(WASTE_ERR_IO, error_);
    commit_started_ = true;
    start_thread_locked();
    if (fill_ > 0) {
        // The tail: direct I/O writes whole blocks, so pad with zeros; the
        // last job cuts the file back to its size.
        size_t bytes = fill_;
        if (direct_) {
            bytes = static_cast<size_t>(round_up(fill_, block));
            std::memset(buffers_[current_].data() + fill_, 0, bytes - fill_);
        }
        jobs_.push_back(Job{current_, buffers_[current_].data(), flushed_, bytes, false});
        flushed_ += fill_;
        fill_ = 0;
    }
    jobs_.push_back(Job{0, nullptr, 0, 0, true});
    changed_.notify_all();
}

void OutputFile::wait_written() {
    WASTE_CHECK(commit_started_);
    if (written_) return;
    if (thread_.joinable()) thread_.join();
    rethrow_background_error();
    written_ = true;
    release_buffers();
}

void OutputFile::finish_commit() {
    wait_written();
    if (committed_) return;
    if (::fsync(fd_) != 0) fail_io("fsync of " + tmp_path_, errno);
#if defined(__linux__)
    if (!direct_) ::posix_fadvise(fd_, 0, 0, POSIX_FADV_DONTNEED);  // written back by the fsync: drop it all
#endif
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) fail_io("close of " + tmp_path_, errno);
    if (::rename(tmp_path_.c_str(), path_.c_str()) != 0) fail_io("renaming " + tmp_path_ + " over it", errno);
    committed_ = true;
    ::close(lock_fd_);  // only after the rename: a second writer never empties a file we are publishing
    lock_fd_ = -1;
}

void OutputFile::writer_loop() {
    for (;;) {
        Job job;
        bool skip = false;
        {
            std::unique_lock lock(mutex_);
            changed_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
            if (jobs_.empty()) return;
            job = jobs_.front();
            jobs_.pop_front();
            skip = stopping_ || !error_.empty();  // after a failure, later buffers are only recycled
        }
        std::string failure;
        if (!skip) {
            try {
                if (job.last) truncate_to_size();
                else write_job(job);
            } catch (const std::exception& e) {
                failure = e.what();
            }
        }
        std::lock_guard lock(mutex_);
        if (!failure.empty() && error_.empty()) error_ = failure;
        if (job.last) return;
        free_.push_back(job.buffer);
        changed_.notify_all();
    }
}

void OutputFile::write_job(const Job& job) {
    const uint8_t* data = job.data;
    size_t done = 0;
    while (done < job.bytes) {
        const ssize_t wrote = ::pwrite(fd_, data + done, job.bytes - done, static_cast<off_t>(job.offset + done));
        if (wrote < 0 && errno == EINTR) continue;
        if (wrote < 0 && errno == EINVAL && direct_) {
            // Some filesystems accept O_DIRECT at open and refuse the write:
            // fall back to buffered writes and say so.
            const int flags = ::fcntl(fd_, F_GETFL);
            if (flags < 0 || ::fcntl(fd_, F_SETFL, flags & ~O_DIRECT) != 0)
                fail_io("turning off O_DIRECT on " + tmp_path_, errno);
            std::lock_guard lock(mutex_);
            direct_ = false;
            reason_ = "buffered: the first O_DIRECT write failed (EINVAL)";
            continue;
        }
        if (wrote < 0)
            fail_io(fmt::format("writing {} bytes at offset {} of {}", job.bytes - done, job.offset + done, tmp_path_), errno);
        if (wrote == 0) fail_io(fmt::format("writing at offset {} of {} (nothing written)", job.offset + done, tmp_path_), EIO);
        done += static_cast<size_t>(wrote);
    }
#if defined(__linux__)
    if (!direct_) {
        // Start writeback of this range now; wait for the previous ranges and
        // drop them from the page cache, so dirty and cached pages stay within
        // about two buffers however large the file grows.
        ::sync_file_range(fd_, static_cast<off_t>(job.offset), static_cast<off_t>(job.bytes), SYNC_FILE_RANGE_WRITE);
        if (job.offset > cache_dropped_) {
            const off_t from = static_cast<off_t>(cache_dropped_), length = static_cast<off_t>(job.offset - cache_dropped_);
            ::sync_file_range(fd_, from, length,
                              SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER);
            ::posix_fadvise(fd_, from, length, POSIX_FADV_DONTNEED);
            cache_dropped_ = job.offset;
        }
    }
#endif
}

void OutputFile::truncate_to_size() {
    if (::ftruncate(fd_, static_cast<off_t>(size_)) != 0)
        fail_io(fmt::format("setting the size of {} to {}", tmp_path_, size_), errno);
}

// Every failure names the file the caller asked for, what failed and the
// errno text (ENOSPC, EDQUOT, EIO...); the destructor then removes the
// temporary, so the target is left as it was.
void OutputFile::fail_io(const std::string& what, int error_number) const {
    fail(WASTE_ERR_IO, "cannot write {}: {}: {} (nothing was published; {} is left as it was)", path_, what,
         std::strerror(error_number), path_);
}

void OutputFile::rethrow_background_error() {
    std::lock_guard lock(mutex_);
    if (!error_.empty()) throw Error(WASTE_ERR_IO, error_);
}

void sync_directory(const std::string& directory) {
    const int fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) fail(WASTE_ERR_IO, "cannot open directory {}: {}", directory, std::strerror(errno));
    const int result = ::fsync(fd);
    const int error_number = errno;
    ::close(fd);
    if (result != 0) fail(WASTE_ERR_IO, "fsync of directory {} failed: {}", directory, std::strerror(error_number));
}

void write_small_file(const std::string& path, std::string_view bytes) {
    OutputFileOptions options;
    options.want_direct = false;
    options.buffers = 1;
    options.buffer_bytes = static_cast<size_t>(std::min<uint64_t>(round_up(std::max<size_t>(bytes.size(), 1), block),
                                                                  uint64_t{16} << 20));
    OutputFile file(path, options);
    file.write({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
    file.commit();
}

}  // namespace waste::platform
