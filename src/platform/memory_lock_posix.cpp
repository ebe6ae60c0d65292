#include "platform/memory_lock.h"

#include <sys/mman.h>
#include <sys/resource.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace waste::platform {

LockResult lock_memory(const void* data, size_t bytes) {
    LockResult result;
    if (bytes == 0) {
        result.locked = true;
        result.note = "nothing to lock";
        return result;
    }
    if (::mlock(data, bytes) == 0) {
        result.locked = true;
        result.note = fmt::format("locked {} bytes", bytes);
        return result;
    }
    const int error = errno;
    rlimit limit{};
    std::string limit_text = "unknown";
    if (::getrlimit(RLIMIT_MEMLOCK, &limit) == 0)
        limit_text = limit.rlim_cur == RLIM_INFINITY ? "unlimited" : fmt::format("{} bytes", limit.rlim_cur);
    result.note = fmt::format("mlock of {} bytes refused ({}); RLIMIT_MEMLOCK is {} — raise it (ulimit -l) or run without --mlock",
                              bytes, std::strerror(error), limit_text);
    return result;
}

void unlock_memory(const void* data, size_t bytes) {
    if (bytes) ::munlock(data, bytes);
}

}  // namespace waste::platform
