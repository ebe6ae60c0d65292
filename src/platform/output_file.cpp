// output_file.cpp — OutputFile's buffers, background writer and commit
// steps; what it asks of the system (open and lock path.tmp, write, size,
// flush, rename, remove) is in output_file_posix.cpp and
// output_file_windows.cpp.
#include "platform/output_file.h"
#include "platform/library_thread.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "platform/error.h"

namespace waste::platform {
namespace {

uint64_t round_up(uint64_t value, uint64_t multiple) { return (value + multiple - 1) / multiple * multiple; }

}  // namespace

OutputFile::OutputFile(std::string path, OutputFileOptions options)
    : path_(std::move(path)), tmp_path_(path_ + ".tmp"), options_(options) {
    options_.buffer_bytes = std::max<size_t>(direct_io_block, round_up(options_.buffer_bytes, direct_io_block));
    options_.buffers = std::max(1, options_.buffers);
    buffers_.reserve(static_cast<size_t>(options_.buffers));
    open_temporary();  // removes what it made when it throws: the destructor does not run for a half-built object
    try {
        take_buffer();
    } catch (...) {
        discard_temporary();
        throw;
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
    if (!committed_) discard_temporary();
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
        if (fill_ % direct_io_block != 0) return {};
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
            bytes = static_cast<size_t>(round_up(fill_, direct_io_block));
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
    publish_temporary();
    committed_ = true;
}

void OutputFile::write_job(const Job& job) { write_at(job.data, job.bytes, job.offset); }

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

// Every failure names the file the caller asked for, what failed and the
// errno text (ENOSPC, EDQUOT, EIO...); the destructor then removes the
// temporary, so the target is left as it was.
void OutputFile::fail_io(const std::string& what, int error_number) const {
    fail(WASTE_ERR_IO, "cannot write {}: {}: {} (nothing was published; {} is left as it was)", path_, what,
         system_error_text(error_number), path_);
}

void OutputFile::rethrow_background_error() {
    std::lock_guard lock(mutex_);
    if (!error_.empty()) throw Error(WASTE_ERR_IO, error_);
}

void write_small_file(const std::string& path, std::string_view bytes) {
    OutputFileOptions options;
    options.want_direct = false;
    options.buffers = 1;
    options.buffer_bytes = static_cast<size_t>(std::min<uint64_t>(round_up(std::max<size_t>(bytes.size(), 1), direct_io_block),
                                                                  uint64_t{16} << 20));
    OutputFile file(path, options);
    file.write({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
    file.commit();
}

}  // namespace waste::platform
