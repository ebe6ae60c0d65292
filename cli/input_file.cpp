// input_file.cpp — reading a user's input file (input_file.h).
#include "input_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "cli_common.h"

namespace waste_cli {

std::string read_input_file(const std::string& path, uint64_t max_bytes, const std::string& what) {
    const std::filesystem::path file_path = path_from_utf8(path);
    std::error_code error;
    const std::filesystem::file_status status = std::filesystem::status(file_path, error);
    if (error || !std::filesystem::exists(status))
        throw RuntimeFailure{fmt::format("cannot open {} {}: {}", what, path, error ? error.message() : std::strerror(ENOENT))};
    if (std::filesystem::is_directory(status)) throw RuntimeFailure{fmt::format("{} {} is a directory, not a file", what, path)};
    const auto too_large = [&] { return RuntimeFailure{fmt::format("{} {} is larger than the {} bytes allowed", what, path, max_bytes)}; };
    std::string bytes;
    if (std::filesystem::is_regular_file(status)) {
        const uint64_t size = std::filesystem::file_size(file_path, error);
        if (!error && size > max_bytes) throw too_large();
        if (!error) bytes.reserve(static_cast<size_t>(size));
    }
    std::ifstream in(file_path, std::ios::binary);
    if (!in) throw RuntimeFailure{fmt::format("cannot open {} {}: {}", what, path, std::strerror(errno))};
    // Read to the end whatever the size said: a pipe has no size, a file may grow.
    char buffer[1 << 16];
    while (in) {
        in.read(buffer, sizeof buffer);
        const auto got = static_cast<size_t>(in.gcount());
        if (bytes.size() + got > max_bytes) throw too_large();
        bytes.append(buffer, got);
    }
    if (in.bad()) throw RuntimeFailure{fmt::format("cannot read {} {}: {}", what, path, std::strerror(errno))};
    return bytes;
}

std::string read_chat_template_file(const std::string& path) {
    return read_input_file(path, uint64_t{1} << 20, "the --chat-template file");
}

}  // namespace waste_cli
