// memory_info.h — how much RAM this process may use.
//
// Physical RAM from sysconf; the cgroup v2 limit (memory.max of this
// process's cgroup, and of each ancestor) caps it: inside a container the
// machine's RAM is not ours to plan with.
#pragma once

#include <cstdint>
#include <string>

namespace waste::platform {

struct MemoryInfo {
    uint64_t physical_bytes = 0;
    uint64_t cgroup_limit_bytes = 0;  // 0 = no limit found
    uint64_t usable_bytes = 0;        // min(physical, cgroup limit)
    std::string cgroup_path;          // where the limit came from, if any
};

MemoryInfo query_memory_info();

// Parses a cgroup v2 memory.max value ("max" or bytes); 0 for "max" or junk.
uint64_t parse_cgroup_memory_max(const std::string& text);

// Peak resident set (VmHWM) and current (VmRSS) of this process, bytes.
uint64_t peak_resident_bytes();
uint64_t current_resident_bytes();

}  // namespace waste::platform
