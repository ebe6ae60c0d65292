// utf8_path.h — a std::filesystem::path from the library's UTF-8 text.
//
// A path built from a std::string is read in the system's narrow encoding:
// UTF-8 on Linux and macOS, but the ANSI code page on Windows, where a
// non-ASCII name would name another file. Built from char8_t it is UTF-8
// everywhere.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace waste::platform {

inline std::filesystem::path utf8_path(std::string_view text) {
    return std::filesystem::path(std::u8string(reinterpret_cast<const char8_t*>(text.data()), text.size()));
}

// The inverse: a path's UTF-8 text.
inline std::string utf8_text(const std::filesystem::path& path) {
    const std::u8string text = path.u8string();
    return std::string(reinterpret_cast<const char*>(text.data()), text.size());
}

}  // namespace waste::platform
