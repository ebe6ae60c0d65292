// small_file.h — a whole small file read into memory, its size bounded.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace waste::platform {

// The file's bytes; WASTE_ERR_IO naming the path when it cannot be opened or
// read, WASTE_ERR_FORMAT when it holds more than max_bytes (it is not read
// past that).
std::string read_small_file(const std::filesystem::path& path, uint64_t max_bytes);

}  // namespace waste::platform
