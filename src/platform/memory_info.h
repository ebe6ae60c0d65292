// memory_info.h — how much RAM this process may use.
//
// Physical RAM from sysconf; the cgroup limit caps it: inside a container
// the machine's RAM is not ours to plan with. cgroup v2: memory.max of this
// process's cgroup and of each ancestor; cgroup v1 (older container
// runtimes): memory.limit_in_bytes of the same walk in the memory
// controller's hierarchy, mounted at /sys/fs/cgroup/memory. The smallest
// binds.
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

// The cgroup path of `controller` ("memory": the v1 line "N:a,memory:/p")
// or, for an empty controller, of the v2 line "0::/p", in the text of
// /proc/self/cgroup; empty when there is no such line.
std::string cgroup_path_of(const std::string& proc_self_cgroup, const std::string& controller);

// Peak resident set (VmHWM) and current (VmRSS) of this process, bytes.
uint64_t peak_resident_bytes();
uint64_t current_resident_bytes();

}  // namespace waste::platform
