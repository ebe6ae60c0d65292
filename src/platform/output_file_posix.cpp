// output_file_posix.cpp — what OutputFile asks of Linux and macOS: path.tmp
// opened (O_DIRECT where the filesystem allows, F_NOCACHE on macOS) and
// locked with flock, positional writes, ftruncate, fsync, rename, unlink.
#include "platform/output_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "platform/error.h"

namespace waste::platform {
namespace {

int fd_of(NativeFile file) { return static_cast<int>(file); }

}  // namespace

void OutputFile::open_temporary() {
    const int flags = O_WRONLY | O_CREAT | O_CLOEXEC;  // no O_TRUNC: path.tmp is emptied once it is ours
    int fd = -1;
    if (options_.want_direct) {
#if defined(O_DIRECT)
        fd = ::open(tmp_path_.c_str(), flags | O_DIRECT, 0644);
        if (fd >= 0) {
            direct_ = true;
            reason_ = "O_DIRECT";
        } else if (errno == EINVAL) {
            reason_ = "buffered: the filesystem refused O_DIRECT at open (EINVAL)";
        } else {
            fail_io("creating " + tmp_path_, errno);
        }
#else
        reason_ = "buffered: this system has no O_DIRECT";
#endif
    } else {
        reason_ = "buffered by request";
    }
    if (fd < 0) fd = ::open(tmp_path_.c_str(), flags, 0644);
    if (fd < 0) fail_io("creating " + tmp_path_, errno);
    file_ = fd;
    try {
        lock_temporary();
        if (::ftruncate(fd, 0) != 0) fail_io("emptying " + tmp_path_, errno);
    } catch (...) {
        ::close(fd);
        file_ = no_native_file;
        if (lock_ != no_native_file) {  // path.tmp is ours only when locked
            ::unlink(tmp_path_.c_str());
            ::close(fd_of(lock_));
            lock_ = no_native_file;
        }
        throw;
    }
}

// One writer per temporary. Two processes writing the same target at the
// same moment (two `--learn` runs) would otherwise share path.tmp and could
// publish a mix of both; so path.tmp is locked (flock, on a descriptor of
// its own, so that the checked close of the file is still the writer's last
// close) from here until it is renamed or removed, and a second writer fails
// cleanly. The lock dies with its process: a killed writer's stale path.tmp
// is simply reused.
void OutputFile::lock_temporary() {
    const int lock_fd = ::open(tmp_path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (lock_fd < 0) fail_io("opening " + tmp_path_ + " to lock it", errno);
    if (::flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
        const int error_number = errno;
        ::close(lock_fd);
        if (error_number == EWOULDBLOCK)
            fail(WASTE_ERR_IO, "cannot write {}: another writer is writing it ({} is locked; nothing was published)",
                 path_, tmp_path_);
        fail_io("locking " + tmp_path_, error_number);
    }
    // The other writer may have renamed path.tmp (published it) between our
    // open and our lock: then we hold a lock on its file, not on path.tmp.
    struct stat ours {}, named {};
    if (::fstat(fd_of(file_), &ours) != 0 || ::stat(tmp_path_.c_str(), &named) != 0 || ours.st_ino != named.st_ino ||
        ours.st_dev != named.st_dev) {
        ::close(lock_fd);
        fail(WASTE_ERR_IO, "cannot write {}: another writer published it while this one started; nothing was published",
             path_);
    }
    lock_ = lock_fd;
}

void OutputFile::write_at(const uint8_t* data, size_t bytes, uint64_t offset) {
    const int fd = fd_of(file_);
    size_t done = 0;
    while (done < bytes) {
        const ssize_t wrote = ::pwrite(fd, data + done, bytes - done, static_cast<off_t>(offset + done));
        if (wrote < 0 && errno == EINTR) continue;
#if defined(O_DIRECT)
        if (wrote < 0 && errno == EINVAL && direct_) {
            // Some filesystems accept O_DIRECT at open and refuse the write:
            // fall back to buffered writes and say so.
            const int flags = ::fcntl(fd, F_GETFL);
            if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_DIRECT) != 0)
                fail_io("turning off O_DIRECT on " + tmp_path_, errno);
            std::lock_guard lock(mutex_);
            direct_ = false;
            reason_ = "buffered: the first O_DIRECT write failed (EINVAL)";
            continue;
        }
#endif
        if (wrote < 0)
            fail_io(fmt::format("writing {} bytes at offset {} of {}", bytes - done, offset + done, tmp_path_), errno);
        if (wrote == 0) fail_io(fmt::format("writing at offset {} of {} (nothing written)", offset + done, tmp_path_), EIO);
        done += static_cast<size_t>(wrote);
    }
#if defined(__linux__)
    if (!direct_) {
        // Start writeback of this range now; wait for the previous ranges and
        // drop them from the page cache, so dirty and cached pages stay within
        // about two buffers however large the file grows.
        ::sync_file_range(fd, static_cast<off_t>(offset), static_cast<off_t>(bytes), SYNC_FILE_RANGE_WRITE);
        if (offset > cache_dropped_) {
            const off_t from = static_cast<off_t>(cache_dropped_), length = static_cast<off_t>(offset - cache_dropped_);
            ::sync_file_range(fd, from, length,
                              SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER);
            ::posix_fadvise(fd, from, length, POSIX_FADV_DONTNEED);
            cache_dropped_ = offset;
        }
    }
#endif
}

void OutputFile::truncate_to_size() {
    if (::ftruncate(fd_of(file_), static_cast<off_t>(size_)) != 0)
        fail_io(fmt::format("setting the size of {} to {}", tmp_path_, size_), errno);
}

void OutputFile::publish_temporary() {
    const int fd = fd_of(file_);
    if (::fsync(fd) != 0) fail_io("fsync of " + tmp_path_, errno);
#if defined(__linux__)
    if (!direct_) ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);  // written back by the fsync: drop it all
#endif
    file_ = no_native_file;
    if (::close(fd) != 0) fail_io("close of " + tmp_path_, errno);
    if (::rename(tmp_path_.c_str(), path_.c_str()) != 0) fail_io("renaming " + tmp_path_ + " over it", errno);
    ::close(fd_of(lock_));  // only after the rename: a second writer never empties a file we are publishing
    lock_ = no_native_file;
}

void OutputFile::discard_temporary() noexcept {
    if (file_ != no_native_file) ::close(fd_of(file_));
    file_ = no_native_file;
    ::unlink(tmp_path_.c_str());  // still locked: nobody else can be writing it
    if (lock_ != no_native_file) ::close(fd_of(lock_));
    lock_ = no_native_file;
}

void sync_directory(const std::string& directory) {
    const int fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) fail(WASTE_ERR_IO, "cannot open directory {}: {}", directory, std::strerror(errno));
    const int result = ::fsync(fd);
    const int error_number = errno;
    ::close(fd);
    if (result != 0) fail(WASTE_ERR_IO, "fsync of directory {} failed: {}", directory, std::strerror(error_number));
}

}  // namespace waste::platform
