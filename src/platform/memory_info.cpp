#include "platform/memory_info.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

namespace waste::platform {
namespace {

std::string read_text(const std::string& path) {
    std::ifstream in(path);
    if (!in) return {};
    std::stringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
}

uint64_t status_field_kib(const char* field) {
    std::ifstream in("/proc/self/status");
    std::string line;
    const std::string prefix = std::string(field) + ":";
    while (std::getline(in, line))
        if (line.rfind(prefix, 0) == 0) return std::stoull(line.substr(prefix.size())) * 1024;
    return 0;
}

}  // namespace

uint64_t parse_cgroup_memory_max(const std::string& text) {
    std::string value = text;
    while (!value.empty() && std::isspace(static_cast<unsigned char>(value.back()))) value.pop_back();
    if (value.empty() || value == "max") return 0;
    if (!std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; }) || value.size() > 19)
        return 0;
    return std::stoull(value);
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

namespace {

// The smallest limit in `file` of the cgroup at `path` and of each ancestor
// under `root` (the hierarchy's mount point) into info.
void take_smallest_limit(MemoryInfo& info, const std::string& root, std::string path, const char* file) {
    if (path.empty()) return;
    while (true) {
        const std::string at = root + (path == "/" ? std::string() : path) + "/" + file;
        uint64_t limit = parse_cgroup_memory_max(read_text(at));
        if (limit >= (uint64_t{1} << 62)) limit = 0;  // v1's "no limit" is PAGE_COUNTER_MAX pages, ~2^63
        if (limit && (!info.cgroup_limit_bytes || limit < info.cgroup_limit_bytes)) {
            info.cgroup_limit_bytes = limit;
            info.cgroup_path = at;
        }
        if (path == "/") break;
        const auto slash = path.rfind('/');
        path = slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
    }
}

}  // namespace

MemoryInfo query_memory_info() {
    MemoryInfo info;
    const long pages = ::sysconf(_SC_PHYS_PAGES);
    const long page_size = ::sysconf(_SC_PAGESIZE);
    if (pages > 0 && page_size > 0) info.physical_bytes = static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size);
    const std::string self = read_text("/proc/self/cgroup");
    take_smallest_limit(info, "/sys/fs/cgroup", cgroup_path_of(self, ""), "memory.max");
    take_smallest_limit(info, "/sys/fs/cgroup/memory", cgroup_path_of(self, "memory"), "memory.limit_in_bytes");
    info.usable_bytes = info.physical_bytes;
    if (info.cgroup_limit_bytes && info.cgroup_limit_bytes < info.usable_bytes) info.usable_bytes = info.cgroup_limit_bytes;
    return info;
}

uint64_t peak_resident_bytes() { return status_field_kib("VmHWM"); }
uint64_t current_resident_bytes() { return status_field_kib("VmRSS"); }

}  // namespace waste::platform
