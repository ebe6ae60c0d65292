// memory_info_windows.cpp — memory_info.h's queries on Windows.
#include "platform/memory_info.h"

#include <algorithm>

#include <windows.h>
#include <psapi.h>

namespace waste::platform {
namespace {

PROCESS_MEMORY_COUNTERS counters() {
    PROCESS_MEMORY_COUNTERS result{};
    result.cb = sizeof result;
    if (!::GetProcessMemoryInfo(::GetCurrentProcess(), &result, sizeof result)) return {};
    return result;
}

}  // namespace

MemoryInfo query_memory_info() {
    MemoryInfo info;
    MEMORYSTATUSEX status{};
    status.dwLength = sizeof status;
    if (::GlobalMemoryStatusEx(&status)) {
        info.physical_bytes = status.ullTotalPhys;
        info.available_bytes = status.ullAvailPhys;
    }
    // The innermost job object's limits (a null handle asks about the job
    // this process is in). Nested jobs' limits are enforced together, and a
    // job's limit can only tighten its parent's, so the innermost binds.
    JOBOBJECT_EXTENDED_LIMIT_INFORMATION job{};
    BOOL in_job = FALSE;
    if (::IsProcessInJob(::GetCurrentProcess(), nullptr, &in_job) && in_job &&
        ::QueryInformationJobObject(nullptr, JobObjectExtendedLimitInformation, &job, sizeof job, nullptr)) {
        const DWORD flags = job.BasicLimitInformation.LimitFlags;
        auto take = [&](bool set, uint64_t limit, const char* which) {
            if (set && limit && (!info.cgroup_limit_bytes || limit < info.cgroup_limit_bytes)) {
                info.cgroup_limit_bytes = limit;
                info.cgroup_path = which;
            }
        };
        take(flags & JOB_OBJECT_LIMIT_PROCESS_MEMORY, job.ProcessMemoryLimit, "job object (process memory limit)");
        take(flags & JOB_OBJECT_LIMIT_JOB_MEMORY, job.JobMemoryLimit, "job object (job memory limit)");
    }
    info.usable_bytes = info.physical_bytes;
    if (info.cgroup_limit_bytes && info.cgroup_limit_bytes < info.usable_bytes) info.usable_bytes = info.cgroup_limit_bytes;
    info.available_bytes = std::min(info.available_bytes, info.usable_bytes);
    return info;
}

uint64_t peak_resident_bytes() { return counters().PeakWorkingSetSize; }
uint64_t current_resident_bytes() { return counters().WorkingSetSize; }

}  // namespace waste::platform
