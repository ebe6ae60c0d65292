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

MemoryInfo query_memory_info() {
    MemoryInfo info;
    const long pages = ::sysconf(_SC_PHYS_PAGES);
    const long page_size = ::sysconf(_SC_PAGESIZE);
    if (pages > 0 && page_size > 0) info.physical_bytes = static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size);
    // cgroup v2: /proc/self/cgroup has one line "0::/path". The limit that
    // binds is the smallest memory.max on the way up to the root.
    const std::string self = read_text("/proc/self/cgroup");
    const auto marker = self.find("0::");
    if (marker != std::string::npos) {
        std::string path = self.substr(marker + 3);
        path = path.substr(0, path.find('\n'));
        while (true) {
            const std::string file = "/sys/fs/cgroup" + (path == "/" ? std::string() : path) + "/memory.max";
            const uint64_t limit = parse_cgroup_memory_max(read_text(file));
            if (limit && (!info.cgroup_limit_bytes || limit < info.cgroup_limit_bytes)) {
                info.cgroup_limit_bytes = limit;
                info.cgroup_path = file;
            }
            if (path.empty() || path == "/") break;
            const auto slash = path.rfind('/');
            path = slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
        }
    }
    info.usable_bytes = info.physical_bytes;
    if (info.cgroup_limit_bytes && info.cgroup_limit_bytes < info.usable_bytes) info.usable_bytes = info.cgroup_limit_bytes;
    return info;
}

uint64_t peak_resident_bytes() { return status_field_kib("VmHWM"); }
uint64_t current_resident_bytes() { return status_field_kib("VmRSS"); }

}  // namespace waste::platform
