// native_file_posix.cpp — native_file.h for Linux and macOS.
//
// Direct I/O is O_DIRECT on Linux, F_NOCACHE on macOS (which has no
// O_DIRECT: the flag is set on the open descriptor with fcntl). Both are
// probed with a real aligned read, because some filesystems accept the flag
// and then refuse the read (upstream once had an "O_DIRECT" that was only a
// comment, and every hit rate it measured was the page cache's —
// docs/anchors.md).
#include "platform/native_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "platform/aligned_buffer.h"
#include "platform/error.h"

namespace waste::platform {
namespace {

constexpr size_t probe_bytes = 4096;

int to_fd(NativeFile file) { return static_cast<int>(file); }

[[noreturn]] void fail_errno(const char* what, const std::string& path, int error_number) {
    fail(WASTE_ERR_IO, "{} {}: {}", what, path, std::strerror(error_number));
}

// O_NONBLOCK: a FIFO or device named where a file belongs must not hold the
// caller in open() (a FIFO waits there for a writer); the S_ISREG check
// below then refuses it. Regular files ignore the flag, which is cleared
// once the file is known to be one.
int open_plain(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) fail_errno("cannot open", path, errno);
    return fd;
}

}  // namespace

OpenedFile open_for_reading(const std::string& path, bool want_direct) {
    OpenedFile opened;
    int fd = -1;
    if (!want_direct) {
        opened.direct_reason = "buffered by request";
    } else {
#if defined(O_DIRECT)
        fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_DIRECT);
        if (fd < 0 && errno != EINVAL) fail_errno("cannot open", path, errno);
        if (fd < 0) opened.direct_reason = "the filesystem refused O_DIRECT at open (EINVAL)";
#elif defined(F_NOCACHE)
        fd = open_plain(path);
        if (::fcntl(fd, F_NOCACHE, 1) != 0) {
            opened.direct_reason = fmt::format("fcntl(F_NOCACHE) was refused ({})", std::strerror(errno));
            ::close(fd);
            fd = -1;
        }
#else
        opened.direct_reason = "this system has no direct I/O";
#endif
    }
    if (fd < 0) fd = open_plain(path);
    struct stat info {};
    if (::fstat(fd, &info) != 0) {
        const int error_number = errno;
        ::close(fd);
        fail_errno("cannot stat", path, error_number);
    }
    if (!S_ISREG(info.st_mode)) {
        ::close(fd);
        fail(WASTE_ERR_IO, "{} is not a regular file", path);
    }
    if (want_direct && opened.direct_reason.empty()) {
        // The probe: a real aligned read. A filesystem that accepted the flag
        // but cannot honour it fails here, and the file is reopened buffered.
        AlignedBuffer probe(probe_bytes);
        const ssize_t got = info.st_size == 0 ? 0 : ::pread(fd, probe.data(), probe_bytes, 0);
        if (got < 0) {
            opened.direct_reason = fmt::format("the probe read with direct I/O failed ({})", std::strerror(errno));
            ::close(fd);
            fd = open_plain(path);
        } else {
            opened.direct = true;
#if defined(O_DIRECT)
            opened.direct_reason = "O_DIRECT, probed with a 4096-byte read";
#else
            opened.direct_reason = "F_NOCACHE, probed with a 4096-byte read";
#endif
        }
    }
    if (const int flags = ::fcntl(fd, F_GETFL); flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    opened.file = fd;
    return opened;
}

void close_native_file(NativeFile file) {
    if (file != no_native_file) ::close(to_fd(file));
}

uint64_t native_file_size(NativeFile file, const std::string& path) {
    struct stat info {};
    if (::fstat(to_fd(file), &info) != 0) fail_errno("cannot stat", path, errno);
    return static_cast<uint64_t>(info.st_size);
}

FileIdentity native_file_identity(NativeFile file, const std::string& path) {
    struct stat info {};
    if (::fstat(to_fd(file), &info) != 0) fail_errno("cannot stat", path, errno);
    return {static_cast<uint64_t>(info.st_dev), static_cast<uint64_t>(info.st_ino)};
}

bool path_identity(const std::string& path, FileIdentity* identity, std::string* why) {
    struct stat info {};
    if (::stat(path.c_str(), &info) != 0) {
        *why = std::strerror(errno);
        return false;
    }
    *identity = {static_cast<uint64_t>(info.st_dev), static_cast<uint64_t>(info.st_ino)};
    return true;
}

int64_t read_at_offset(NativeFile file, uint8_t* buffer, size_t bytes, uint64_t offset, int* error) {
    while (true) {
        const ssize_t got = ::pread(to_fd(file), buffer, bytes, static_cast<off_t>(offset));
        if (got >= 0) return got;
        if (errno == EINTR) continue;
        *error = errno;
        return -1;
    }
}

int64_t cached_pages(NativeFile file, uint64_t bytes) {
    if (bytes == 0) return 0;
    void* map = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, to_fd(file), 0);
    if (map == MAP_FAILED) fail(WASTE_ERR_IO, "mmap for mincore failed: {}", std::strerror(errno));
    const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
#if defined(__APPLE__)
    std::vector<char> resident((bytes + page - 1) / page);
#else
    std::vector<unsigned char> resident((bytes + page - 1) / page);
#endif
    const int result = ::mincore(map, bytes, resident.data());
    const int error_number = errno;
    ::munmap(map, bytes);
    if (result != 0) fail(WASTE_ERR_IO, "mincore failed: {}", std::strerror(error_number));
    int64_t count = 0;
    for (auto page_state : resident) count += page_state & 1;
    return count;
}

void drop_cached_pages(NativeFile file, uint64_t offset, uint64_t bytes) {
#if defined(POSIX_FADV_DONTNEED)
    (void)::posix_fadvise(to_fd(file), static_cast<off_t>(offset), static_cast<off_t>(bytes), POSIX_FADV_DONTNEED);
#else
    (void)file, (void)offset, (void)bytes;
#endif
}

std::string system_error_text(int error) { return std::strerror(error); }

}  // namespace waste::platform
