// output_file.h — a file written front to back, fast, with bounded memory,
// committed atomically.
//
// Owns the write side of large sequential files (trunk.bin, expert banks):
// bytes go to `path.tmp` through a few large 4096-aligned buffers that a
// background thread writes while the caller fills the next one (or, with
// claim/advance, fills in place); commit() flushes, fsyncs and renames
// `path.tmp` to `path`, in steps when the caller wants to defer the fsync.
// A file that is never committed is removed when the object dies, so a
// failure leaves no `.tmp`. Buffers can come from a pool shared by the files
// of one job, so that they are allocated and faulted in once.
//
// This is the library's only way of publishing a file (docs/ARCHITECTURE.md,
// "Writing files"): every write, the fsync and the close are checked, and a
// failure (ENOSPC, EDQUOT, EIO...) is WASTE_ERR_IO naming `path`, what failed
// and the errno text; `path` itself is only ever replaced by the rename of a
// complete, fsynced file, so an older `path` survives any failure.
//
// The page cache is bypassed where the filesystem allows it (O_DIRECT, probed
// by the first real write, with a fallback that says why in io_mode_reason());
// without it, written ranges are pushed to disk and dropped from the cache as
// the file grows (sync_file_range + POSIX_FADV_DONTNEED), so writing a 1 TB
// container neither grows RSS nor evicts everything else from RAM. On
// Windows (output_file_windows.cpp) writes go through the system cache, and
// the lock on path.tmp is the open itself (no write sharing).
//
// Deliberately not here: what the bytes mean (format/), reading (direct_file.h).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "platform/aligned_buffer.h"
#include "platform/native_file.h"

namespace waste::platform {

// Output buffers handed from one file to the next, so that writing many files
// in a row allocates (and page-faults in) its buffers once. Thread-safe.
class BufferPool {
public:
    explicit BufferPool(size_t max_kept = 8) : max_kept_(max_kept) {}
    AlignedBuffer acquire(size_t bytes);   // a kept buffer of this size, or a new zeroed one
    void release(AlignedBuffer buffer);    // kept, up to max_kept; contents are not cleared

private:
    std::mutex mutex_;
    std::vector<AlignedBuffer> kept_;
    size_t max_kept_;
};

struct OutputFileOptions {
    // Size of each buffer, a multiple of 4096. One is filled by the caller,
    // the others are being written; 16 MiB matches what a `dd bs=16M
    // oflag=direct` needs to reach a disk's sequential speed.
    size_t buffer_bytes = size_t{16} << 20;
    int buffers = 3;
    bool want_direct = true;
    std::shared_ptr<BufferPool> pool;      // optional: where buffers come from and return to
};

class OutputFile {
public:
    // Creates (truncates) path + ".tmp", locked against a second writer of
    // the same path (which fails with WASTE_ERR_IO). Throws WASTE_ERR_IO.
    explicit OutputFile(std::string path, OutputFileOptions options = {});
    ~OutputFile();  // without commit(): removes the .tmp file; never throws
    OutputFile(const OutputFile&) = delete;
    OutputFile& operator=(const OutputFile&) = delete;

    // Appends bytes. Throws WASTE_ERR_IO if an earlier background write failed.
    void write(std::span<const uint8_t> bytes);
    void write_zeros(uint64_t count);
    // Zero-copy appending: `bytes` writable bytes at the end of the file,
    // inside an output buffer, for the caller to fill and then advance() past.
    // Empty when they cannot be contiguous (more than a buffer, or the file's
    // end is not 4096-aligned and the current buffer is too full). The
    // contents are stale: the caller writes every byte.
    std::span<uint8_t> claim(size_t bytes);
    void advance(size_t bytes);
    // Bytes appended so far (the final size of the file).
    uint64_t size() const { return size_; }

    // Writes what is buffered, fsyncs, renames path.tmp -> path. The caller
    // fsyncs the directory (sync_directory) when the renames must be durable.
    void commit() {
        start_commit();
        finish_commit();
    }
    // The same in steps, so that the caller can go on producing other files:
    // start_commit() hands the tail to the background writer and returns at
    // once; wait_written() waits for every byte to reach the file and frees
    // the buffers; finish_commit() then fsyncs and renames. Deferring the
    // fsyncs of many files to the end costs one device flush instead of a
    // stall per file. Each throws WASTE_ERR_IO naming the file if any of it
    // failed. No write() after start_commit().
    void start_commit();
    void wait_written();
    void finish_commit();

    const std::string& path() const { return path_; }
    bool direct() const { return direct_; }
    const std::string& io_mode_reason() const { return reason_; }

private:
    struct Job {
        int buffer = 0;
        uint8_t* data = nullptr;    // buffers_[buffer].data(), so the writer never reads buffers_ itself
        uint64_t offset = 0;
        size_t bytes = 0;
        bool last = false;          // after the tail: cut the file to its size, end the thread
    };
    void submit_current();
    void take_buffer();
    void release_buffers();
    void start_thread_locked();
    void writer_loop();
    void write_job(const Job& job);
    void rethrow_background_error();
    [[noreturn]] void fail_io(const std::string& what, int error_number) const;  // error_number: system_error_text's
    // What the system does (output_file_posix.cpp, output_file_windows.cpp):
    void open_temporary();      // path.tmp created, locked against a second writer, emptied; throws, leaving nothing of ours
    void lock_temporary();
    void write_at(const uint8_t* data, size_t bytes, uint64_t offset);
    void truncate_to_size();
    void publish_temporary();   // flush to disk, rename path.tmp over path, release the lock
    void discard_temporary() noexcept;  // close and remove path.tmp, release the lock

    std::string path_, tmp_path_;
    OutputFileOptions options_;
    NativeFile file_ = no_native_file;
    NativeFile lock_ = no_native_file;  // POSIX: holds the flock on path.tmp until it is renamed or removed
    bool direct_ = false;
    bool commit_started_ = false;
    bool written_ = false;          // every byte is in the file (after wait_written)
    bool committed_ = false;
    std::string reason_;
    uint64_t size_ = 0;         // bytes appended
    uint64_t flushed_ = 0;      // bytes handed to the writer (a multiple of 4096 until commit)
    std::vector<AlignedBuffer> buffers_;
    int current_ = 0;           // buffer the caller fills
    size_t fill_ = 0;           // bytes in it

    // background writer: jobs in order; buffers come back through free_
    std::thread thread_;
    std::mutex mutex_;
    std::condition_variable changed_;
    std::deque<Job> jobs_;
    std::vector<int> free_;
    bool stopping_ = false;         // abandoned: skip what is left
    std::string error_;         // first background failure
    uint64_t cache_dropped_ = 0;  // buffered mode: bytes already written back and dropped
};

// fsyncs a directory so that renames inside it survive a crash. Throws WASTE_ERR_IO.
void sync_directory(const std::string& directory);

// Writes a whole small file as path.tmp -> fsync -> rename (buffered), with
// OutputFile's checks and errors. The directory is not fsynced.
void write_small_file(const std::string& path, std::string_view bytes);

}  // namespace waste::platform
