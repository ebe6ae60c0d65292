// memory_info_apple.cpp — memory_info.h's queries on macOS (written to
// Apple's documented APIs; no Mac has built or run it: docs/PLATFORMS.md).
#include "platform/memory_info.h"

#include <mach/mach.h>
#include <sys/resource.h>
#include <sys/sysctl.h>

#include <algorithm>

namespace waste::platform {
namespace {

uint64_t task_resident_bytes() {
    mach_task_basic_info_data_t info{};
    mach_msg_type_number_t count = MACH_TASK_BASIC_INFO_COUNT;
    if (task_info(mach_task_self(), MACH_TASK_BASIC_INFO, reinterpret_cast<task_info_t>(&info), &count) != KERN_SUCCESS)
        return 0;
    return info.resident_size;
}

}  // namespace

MemoryInfo query_memory_info() {
    MemoryInfo info;
    uint64_t bytes = 0;
    size_t size = sizeof bytes;
    if (::sysctlbyname("hw.memsize", &bytes, &size, nullptr, 0) == 0) info.physical_bytes = bytes;
    info.usable_bytes = info.physical_bytes;
    return info;
}

uint64_t current_resident_bytes() { return task_resident_bytes(); }

uint64_t peak_resident_bytes() {
    // getrusage's ru_maxrss is the peak, in bytes on macOS (kilobytes on Linux).
    rusage usage{};
    const uint64_t reported = ::getrusage(RUSAGE_SELF, &usage) == 0 ? static_cast<uint64_t>(usage.ru_maxrss) : 0;
    return std::max(reported, task_resident_bytes());
}

}  // namespace waste::platform
