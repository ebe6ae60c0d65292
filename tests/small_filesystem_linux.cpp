// small_filesystem_linux.cpp — SmallFilesystem (test_support.h): a tmpfs of
// a chosen size, for the disk-full tests (Linux only: mount needs root).
#include "test_support.h"

#include <sys/mount.h>
#include <sys/statvfs.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace fs = std::filesystem;

namespace waste_test {

SmallFilesystem::SmallFilesystem(uint64_t bytes) {
    const std::string options = "size=" + std::to_string(bytes) + ",mode=0755";
    if (::mount("tmpfs", dir_.path().c_str(), "tmpfs", MS_NOSUID | MS_NODEV, options.c_str()) == 0) {
        mounted_ = true;
    } else {
        why_ = "cannot mount a " + std::to_string(bytes) + "-byte tmpfs on " + dir_.path().string() + ": " +
               std::strerror(errno) + " (a real disk-full test needs root / CAP_SYS_ADMIN)";
    }
}

SmallFilesystem::~SmallFilesystem() {
    if (mounted_) ::umount2(dir_.path().c_str(), MNT_DETACH);
}

void SmallFilesystem::resize(uint64_t bytes) {
    const std::string options = "size=" + std::to_string(bytes);
    if (::mount("tmpfs", dir_.path().c_str(), "tmpfs", MS_REMOUNT | MS_NOSUID | MS_NODEV, options.c_str()) != 0)
        throw std::runtime_error("cannot resize the tmpfs on " + dir_.path().string() + ": " + std::strerror(errno));
}

void SmallFilesystem::fill() {
    const int fd = ::open((path() / "filler").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) throw std::runtime_error("cannot create the filler: " + std::string(std::strerror(errno)));
    const std::string block(4096, 'f');
    for (size_t size = block.size(); size >= 1;) {  // whole pages, then what is left of the last one
        if (::write(fd, block.data(), size) < 0) {
            if (errno != ENOSPC) break;
            size /= 2;
        }
    }
    ::close(fd);
}

void SmallFilesystem::unfill() { fs::remove(path() / "filler"); }

uint64_t SmallFilesystem::free_bytes() const {
    struct statvfs info {};
    if (::statvfs(path().c_str(), &info) != 0) return 0;
    return static_cast<uint64_t>(info.f_bavail) * info.f_frsize;
}

}  // namespace waste_test
