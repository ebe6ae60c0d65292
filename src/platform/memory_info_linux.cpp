// memory_info_linux.cpp — memory_info.h's queries on Linux: sysconf for the
// RAM, the cgroup files for the limit, /proc/self/status for the resident set.
#include "platform/memory_info.h"

#include <unistd.h>

#include <algorithm>
#include <cstdint>

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
    info.available_bytes = std::min(parse_meminfo_available(read_text("/proc/meminfo")), info.usable_bytes);
    if (info.cgroup_limit_bytes) {
        // the limiting cgroup's use beside its limit (v2 memory.current, v1
        // memory.usage_in_bytes, in the folder the limit came from)
        const std::string folder = info.cgroup_path.substr(0, info.cgroup_path.rfind('/') + 1);
        const bool v1 = info.cgroup_path.ends_with("memory.limit_in_bytes");
        const uint64_t used = parse_cgroup_memory_max(read_text(folder + (v1 ? "memory.usage_in_bytes" : "memory.current")));
        if (used) {  // 0: unreadable (a cgroup in use never reads 0)
            const uint64_t left = used < info.cgroup_limit_bytes ? info.cgroup_limit_bytes - used : 0;
            info.available_bytes = info.available_bytes ? std::min(info.available_bytes, left) : left;
        }
    }
    return info;
}

uint64_t peak_resident_bytes() { return status_field_kib("VmHWM"); }
uint64_t current_resident_bytes() { return status_field_kib("VmRSS"); }

}  // namespace waste::platform
