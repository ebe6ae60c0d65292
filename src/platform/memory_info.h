// memory_info.h — how much RAM this process may use.
//
// Physical RAM, capped by the limit the system enforces on this process:
// inside a container the machine's RAM is not ours to plan with.
//   Linux (memory_info_linux.cpp): sysconf; cgroup v2: memory.max of this
//     process's cgroup and of each ancestor; cgroup v1 (older container
//     runtimes): memory.limit_in_bytes of the same walk in the memory
//     controller's hierarchy, mounted at /sys/fs/cgroup/memory. The
//     smallest binds.
//   Windows (memory_info_windows.cpp): GlobalMemoryStatusEx; the job
//     objects the process is in (process and job memory limits, the
//     smallest binds), which is what a Windows container or a launcher that
//     caps memory uses.
//   macOS (memory_info_apple.cpp): sysctl hw.memsize; no per-process limit.
// Beside them, what is available now (the default budget's ceiling):
// Linux's MemAvailable and a limited cgroup's memory.current (v2) or
// memory.usage_in_bytes (v1); Windows' ullAvailPhys; unknown on macOS.
#pragma once

#include <cstdint>
#include <string>

namespace waste::platform {

struct MemoryInfo {
    uint64_t physical_bytes = 0;
    uint64_t cgroup_limit_bytes = 0;  // 0 = no limit found (a cgroup's, or a Windows job object's)
    uint64_t usable_bytes = 0;        // min(physical, cgroup limit)
    // What the system could give this process now without swapping: Linux's
    // MemAvailable (free plus reclaimable page cache), within a limited
    // cgroup also its limit less its current use; Windows' available
    // physical memory. 0 = not known (macOS): the plan then takes usable.
    uint64_t available_bytes = 0;
    std::string cgroup_path;          // where the limit came from, if any
};

MemoryInfo query_memory_info();

// The MemAvailable line of /proc/meminfo's text, bytes; 0 when absent.
uint64_t parse_meminfo_available(const std::string& proc_meminfo);

// Parses a cgroup v2 memory.max value ("max" or bytes); 0 for "max" or junk.
uint64_t parse_cgroup_memory_max(const std::string& text);

// The cgroup path of `controller` ("memory": the v1 line "N:a,memory:/p")
// or, for an empty controller, of the v2 line "0::/p", in the text of
// /proc/self/cgroup; empty when there is no such line.
std::string cgroup_path_of(const std::string& proc_self_cgroup, const std::string& controller);

// Peak resident set (VmHWM) and current (VmRSS) of this process, bytes: on
// Windows the peak and current working set, on macOS the task's resident
// size (the peak is then the largest seen by these calls and the system's).
uint64_t peak_resident_bytes();
uint64_t current_resident_bytes();

}  // namespace waste::platform
