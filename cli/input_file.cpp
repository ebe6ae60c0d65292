// input_file.cpp — reading a user's input file (input_file.h).
#include "input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "cli_common.h"

namespace waste_cli {
namespace {

struct Descriptor {
    int fd = -1;
    ~Descriptor() {
        if (fd >= 0) ::close(fd);
    }
};

}  // namespace

std::string read_input_file(const std::string& path, uint64_t max_bytes, const std::string& what) {
    Descriptor file;
    do {
        file.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    } while (file.fd < 0 && errno == EINTR);
    if (file.fd < 0) throw RuntimeFailure{fmt::format("cannot open {} {}: {}", what, path, std::strerror(errno))};
    struct stat info {};
    if (::fstat(file.fd, &info) != 0) throw RuntimeFailure{fmt::format("cannot read {} {}: {}", what, path, std::strerror(errno))};
    if (S_ISDIR(info.st_mode)) throw RuntimeFailure{fmt::format("{} {} is a directory, not a file", what, path)};
    const auto too_large = [&] { return RuntimeFailure{fmt::format("{} {} is larger than the {} bytes allowed", what, path, max_bytes)}; };
    if (S_ISREG(info.st_mode) && static_cast<uint64_t>(info.st_size) > max_bytes) throw too_large();
    std::string bytes;
    if (S_ISREG(info.st_mode)) bytes.reserve(static_cast<size_t>(info.st_size));
    // Read to the end whatever stat said: a pipe has no size, a file may grow.
    char buffer[1 << 16];
    for (;;) {
        const ssize_t got = ::read(file.fd, buffer, sizeof buffer);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) throw RuntimeFailure{fmt::format("cannot read {} {}: {}", what, path, std::strerror(errno))};
        if (got == 0) break;
        if (bytes.size() + static_cast<uint64_t>(got) > max_bytes) throw too_large();
        bytes.append(buffer, static_cast<size_t>(got));
    }
    return bytes;
}

std::string read_chat_template_file(const std::string& path) {
    return read_input_file(path, uint64_t{1} << 20, "the --chat-template file");
}

}  // namespace waste_cli
