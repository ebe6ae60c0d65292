// small_file.cpp — see small_file.h.
#include "platform/small_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "platform/error.h"

namespace waste::platform {

std::string read_small_file(const std::filesystem::path& path, uint64_t max_bytes) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail(WASTE_ERR_IO, "cannot open {}: {}", path.string(), std::strerror(errno));
    std::string text;
    char buffer[65536];
    for (;;) {
        const ssize_t got = ::read(fd, buffer, sizeof buffer);
        if (got < 0) {
            ::close(fd);
            fail(WASTE_ERR_IO, "cannot read {}: {}", path.string(), std::strerror(errno));
        }
        if (got == 0) break;
        text.append(buffer, static_cast<size_t>(got));
        if (text.size() > max_bytes) {
            ::close(fd);
            fail(WASTE_ERR_FORMAT, "{}: larger than {} bytes", path.string(), max_bytes);
        }
    }
    ::close(fd);
    return text;
}

}  // namespace waste::platform
