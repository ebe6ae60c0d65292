// memory_lock_windows.cpp — memory_lock.h on Windows: VirtualLock, which can
// lock no more than the process's minimum working set; so the minimum (and
// the maximum) are first raised by the region's size.
#include "platform/memory_lock.h"

#include <windows.h>

#include <fmt/format.h>

#include "platform/windows_text.h"

namespace waste::platform {

LockResult lock_memory(const void* data, size_t bytes) {
    LockResult result;
    if (bytes == 0) {
        result.locked = true;
        result.note = "nothing to lock";
        return result;
    }
    SIZE_T minimum = 0, maximum = 0;
    HANDLE process = ::GetCurrentProcess();
    if (!::GetProcessWorkingSetSize(process, &minimum, &maximum) ||
        !::SetProcessWorkingSetSize(process, minimum + bytes, maximum + bytes)) {
        result.note = fmt::format("raising the working set by {} bytes to lock them was refused ({}); run without --mlock",
                                  bytes, windows_error_text(::GetLastError()));
        return result;
    }
    if (::VirtualLock(const_cast<void*>(data), bytes)) {
        result.locked = true;
        result.note = fmt::format("locked {} bytes", bytes);
        return result;
    }
    result.note = fmt::format("VirtualLock of {} bytes refused ({}); run without --mlock", bytes,
                              windows_error_text(::GetLastError()));
    ::SetProcessWorkingSetSize(process, minimum, maximum);
    return result;
}

void unlock_memory(const void* data, size_t bytes) {
    if (bytes) ::VirtualUnlock(const_cast<void*>(data), bytes);
}

}  // namespace waste::platform
