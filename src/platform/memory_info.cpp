// memory_info.cpp — the parsers behind the Linux query (memory_info_linux.cpp),
// kept apart from it so that every platform's tests check them.
#include "platform/memory_info.h"

#include <algorithm>
#include <cctype>
#include <sstream>

namespace waste::platform {

uint64_t parse_cgroup_memory_max(const std::string& text) {
    std::string value = text;
    while (!value.empty() && std::isspace(static_cast<unsigned char>(value.back()))) value.pop_back();
    if (value.empty() || value == "max") return 0;
    if (!std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; }) || value.size() > 19)
        return 0;
    return std::stoull(value);
}

uint64_t parse_meminfo_available(const std::string& proc_meminfo) {
    std::istringstream in(proc_meminfo);
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("MemAvailable:", 0) != 0) continue;
        // "MemAvailable:   12345678 kB"
        const size_t digits = line.find_first_of("0123456789");
        if (digits == std::string::npos) return 0;
        uint64_t kib = 0;
        for (size_t i = digits; i < line.size() && line[i] >= '0' && line[i] <= '9'; ++i) {
            if (kib > (UINT64_MAX - 9) / 10 / 1024) return 0;  // not a size this machine could have
            kib = kib * 10 + static_cast<uint64_t>(line[i] - '0');
        }
        return kib * 1024;
    }
    return 0;
}

std::string cgroup_path_of(const std::string& proc_self_cgroup, const std::string& controller) {
    std::istringstream lines(proc_self_cgroup);
    for (std::string line; std::getline(lines, line);) {
        const auto first = line.find(':');
        const auto second = first == std::string::npos ? first : line.find(':', first + 1);
        if (second == std::string::npos) continue;
        const std::string controllers = line.substr(first + 1, second - first - 1);
        bool match = controllers.empty() && controller.empty() && line.compare(0, first, "0") == 0;
        if (!controller.empty()) {
            std::istringstream names(controllers);
            for (std::string name; std::getline(names, name, ',');) match = match || name == controller;
        }
        if (match) return line.substr(second + 1);
    }
    return {};
}

}  // namespace waste::platform
