#include "platform/direct_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "platform/aligned_buffer.h"
#include "platform/error.h"

namespace waste::platform {
namespace {

constexpr uint64_t block = 4096;

[[noreturn]] void fail_errno(const std::string& what, const std::string& path, int error_number) {
    fail(WASTE_ERR_IO, "{} {}: {}", what, path, std::strerror(error_number));
}

void pread_fully(int fd, uint64_t offset, std::span<uint8_t> buffer, const std::string& path) {
    size_t done = 0;
    while (done < buffer.size()) {
        ssize_t got = ::pread(fd, buffer.data() + done, buffer.size() - done, static_cast<off_t>(offset + done));
        if (got < 0) {
            if (errno == EINTR) continue;
            fail(WASTE_ERR_IO, "read of {} bytes at offset {} in {}: {}", buffer.size(), offset, path, std::strerror(errno));
        }
        if (got == 0)
            fail(WASTE_ERR_IO, "short read in {}: {} of {} bytes at offset {} (file truncated?)", path, done,
                 buffer.size(), offset);
        done += static_cast<size_t>(got);
    }
}

}  // namespace

DirectFile::DirectFile(const std::string& path, bool want_direct) : path_(path) {
    int flags = O_RDONLY | O_CLOEXEC;
    if (want_direct) {
        fd_ = ::open(path.c_str(), flags | O_DIRECT);
        if (fd_ < 0 && errno != EINVAL) fail_errno("cannot open", path, errno);
        if (fd_ < 0) reason_ = "the filesystem refused O_DIRECT at open (EINVAL)";
    } else {
        reason_ = "buffered by request";
    }
    if (fd_ < 0) fd_ = ::open(path.c_str(), flags);
    if (fd_ < 0) fail_errno("cannot open", path, errno);
    struct stat info {};
    if (::fstat(fd_, &info) != 0) {
        int error_number = errno;
        ::close(fd_);
        fd_ = -1;
        fail_errno("cannot stat", path, error_number);
    }
    if (!S_ISREG(info.st_mode)) {
        ::close(fd_);
        fd_ = -1;
        fail(WASTE_ERR_IO, "{} is not a regular file", path);
    }
    size_ = static_cast<uint64_t>(info.st_size);
    device_ = static_cast<uint64_t>(info.st_dev);
    inode_ = static_cast<uint64_t>(info.st_ino);
    if (want_direct && reason_.empty()) {
        // The probe: a real aligned read. A filesystem that accepted the flag
        // but cannot honour it fails here (EINVAL), and we reopen buffered.
        AlignedBuffer probe(block);
        ssize_t got = size_ == 0 ? 0 : ::pread(fd_, probe.data(), block, 0);
        if (got < 0) {
            reason_ = fmt::format("the probe read with O_DIRECT failed ({})", std::strerror(errno));
            ::close(fd_);
            fd_ = ::open(path.c_str(), flags);
            if (fd_ < 0) fail_errno("cannot open", path, errno);
        } else {
            mode_ = IoMode::direct;
            reason_ = "O_DIRECT, probed with a 4096-byte read";
        }
    }
}

DirectFile::DirectFile(DirectFile&& other) noexcept { *this = std::move(other); }

DirectFile& DirectFile::operator=(DirectFile&& other) noexcept {
    if (this != &other) {
        if (fd_ >= 0) ::close(fd_);
        path_ = std::move(other.path_);
        fd_ = other.fd_;
        size_ = other.size_;
        device_ = other.device_;
        inode_ = other.inode_;
        mode_ = other.mode_;
        reason_ = std::move(other.reason_);
        other.fd_ = -1;
    }
    return *this;
}

DirectFile::~DirectFile() {
    if (fd_ >= 0) ::close(fd_);
}

void DirectFile::check_unchanged() const {
    struct stat open_file {};
    if (::fstat(fd_, &open_file) != 0) fail_errno("cannot stat", path_, errno);
    if (static_cast<uint64_t>(open_file.st_size) != size_)
        fail(WASTE_ERR_IO, "{} changed size while open: {} bytes when opened, {} now (truncated or rewritten in place)", path_,
             size_, static_cast<uint64_t>(open_file.st_size));
    struct stat on_path {};
    if (::stat(path_.c_str(), &on_path) != 0)
        fail(WASTE_ERR_IO, "{} was removed or renamed while open: {}", path_, std::strerror(errno));
    if (static_cast<uint64_t>(on_path.st_dev) != device_ || static_cast<uint64_t>(on_path.st_ino) != inode_)
        fail(WASTE_ERR_IO, "{} was replaced while open (inode {} when opened, the path now names inode {})", path_, inode_,
             static_cast<uint64_t>(on_path.st_ino));
}

void DirectFile::read_at(uint64_t offset, std::span<uint8_t> buffer) const {
    if (offset > size_ || buffer.size() > size_ - offset)
        fail(WASTE_ERR_IO, "read of {} bytes at offset {} runs past the end of {} ({} bytes)", buffer.size(), offset,
             path_, size_);
    if (mode_ == IoMode::direct) {
        WASTE_CHECK(offset % block == 0 && buffer.size() % block == 0 &&
                    reinterpret_cast<uintptr_t>(buffer.data()) % block == 0);
    }
    pread_fully(fd_, offset, buffer, path_);
}

void DirectFile::read_any(uint64_t offset, std::span<uint8_t> buffer) const {
    if (offset > size_ || buffer.size() > size_ - offset)
        fail(WASTE_ERR_IO, "read of {} bytes at offset {} runs past the end of {} ({} bytes)", buffer.size(), offset,
             path_, size_);
    if (mode_ != IoMode::direct) {
        pread_fully(fd_, offset, buffer, path_);
        return;
    }
    // Bounce through aligned chunks; the last chunk may end past EOF, which a
    // direct read answers with a short count — so we read what exists.
    // The bounce buffer is sized to the read, not the chunk: load_trunk calls
    // this for every small tensor, and zero-filling 8 MiB each time made
    // loading a 400 KB trunk take a second.
    constexpr uint64_t chunk = uint64_t{8} << 20;
    AlignedBuffer bounce(std::min<uint64_t>(chunk, buffer.size()) + 2 * block);
    uint64_t done = 0;
    while (done < buffer.size()) {
        const uint64_t want_start = offset + done;
        const uint64_t aligned_start = want_start / block * block;
        const uint64_t take = std::min<uint64_t>(buffer.size() - done, chunk);
        const uint64_t aligned_end = std::min<uint64_t>((want_start + take + block - 1) / block * block,
                                                        (size_ + block - 1) / block * block);
        size_t read_bytes = 0;
        while (read_bytes < aligned_end - aligned_start) {
            ssize_t got = ::pread(fd_, bounce.data() + read_bytes, aligned_end - aligned_start - read_bytes,
                                  static_cast<off_t>(aligned_start + read_bytes));
            if (got < 0 && errno == EINTR) continue;
            if (got < 0) fail_errno("direct read failed in", path_, errno);
            if (got == 0) break;
            read_bytes += static_cast<size_t>(got);
        }
        if (read_bytes < want_start - aligned_start + take)
            fail(WASTE_ERR_IO, "short read in {} at offset {} (file truncated?)", path_, want_start);
        std::memcpy(buffer.data() + done, bounce.data() + (want_start - aligned_start), take);
        done += take;
    }
}

std::string read_small_file(const std::string& path, uint64_t max_bytes) {
    DirectFile file(path, false);
    if (file.size() > max_bytes) fail(WASTE_ERR_FORMAT, "{} is {} bytes, more than the {} allowed", path, file.size(), max_bytes);
    std::string text(file.size(), '\0');
    file.read_at(0, {reinterpret_cast<uint8_t*>(text.data()), text.size()});
    return text;
}

}  // namespace waste::platform
