// native_file_windows.cpp — native_file.h for Windows.
//
// Files are opened for overlapped I/O, so that reads at explicit offsets from
// several threads proceed at once (a handle opened for synchronous I/O
// serialises every operation on it). Each thread waits for its own reads on
// an event of its own. Direct I/O is FILE_FLAG_NO_BUFFERING, which needs
// offsets, sizes and addresses aligned to the volume's sector size: the
// engine aligns to 4096, so a volume whose sector is larger (or does not
// divide 4096) is read buffered, and a real aligned read probes the rest.
#include "platform/native_file.h"

#include <windows.h>

#include <algorithm>

#include "platform/aligned_buffer.h"
#include "platform/error.h"
#include "platform/windows_text.h"

namespace waste::platform {
namespace {

constexpr DWORD probe_bytes = 4096;

HANDLE to_handle(NativeFile file) { return reinterpret_cast<HANDLE>(file); }

[[noreturn]] void fail_windows(const char* what, const std::string& path, DWORD error) {
    fail(WASTE_ERR_IO, "{} {}: {}", what, path, windows_error_text(error));
}

HANDLE open_handle(const std::string& path, DWORD flags) {
    const std::wstring wide = utf8_to_wide(path, "file path");
    // FILE_SHARE_DELETE: like a POSIX descriptor, an open file may be renamed
    // or replaced under it (check_unchanged then notices).
    return ::CreateFileW(wide.c_str(), GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, nullptr,
                         OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL | FILE_FLAG_OVERLAPPED | flags, nullptr);
}

// The sector size FILE_FLAG_NO_BUFFERING aligns to, 0 when the system does not say.
DWORD sector_bytes(HANDLE handle) {
    FILE_STORAGE_INFO storage{};
    if (!::GetFileInformationByHandleEx(handle, FileStorageInfo, &storage, sizeof storage)) return 0;
    return std::max(storage.LogicalBytesPerSector, storage.PhysicalBytesPerSectorForPerformance);
}

// A manual-reset event for one overlapped read, closed when the read is done.
// Not one per thread: a thread_local with a destructor can run after
// winpthreads has freed the thread's emulated TLS block (a page fault at
// thread exit, seen under Wine), and an event costs microseconds beside a read.
struct ReadEvent {
    HANDLE handle = ::CreateEventW(nullptr, TRUE, FALSE, nullptr);
    ReadEvent() = default;
    ReadEvent(const ReadEvent&) = delete;
    ReadEvent& operator=(const ReadEvent&) = delete;
    ~ReadEvent() {
        if (handle) ::CloseHandle(handle);
    }
};

}  // namespace

OpenedFile open_for_reading(const std::string& path, bool want_direct) {
    OpenedFile opened;
    HANDLE handle = INVALID_HANDLE_VALUE;
    if (!want_direct) {
        opened.direct_reason = "buffered by request";
    } else {
        handle = open_handle(path, FILE_FLAG_NO_BUFFERING);
        if (handle == INVALID_HANDLE_VALUE) {
            // A missing file fails the plain open below too, with its reason;
            // otherwise what follows is a buffered open, not a probe of direct reads.
            opened.direct_reason = fmt::format("the open with FILE_FLAG_NO_BUFFERING failed ({})",
                                               windows_error_text(::GetLastError()));
            want_direct = false;
        }
    }
    if (handle == INVALID_HANDLE_VALUE) handle = open_handle(path, 0);
    if (handle == INVALID_HANDLE_VALUE) fail_windows("cannot open", path, ::GetLastError());
    BY_HANDLE_FILE_INFORMATION info{};
    if (!::GetFileInformationByHandle(handle, &info) || ::GetFileType(handle) != FILE_TYPE_DISK ||
        (info.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY)) {
        ::CloseHandle(handle);
        fail(WASTE_ERR_IO, "{} is not a regular file", path);
    }
    opened.file = reinterpret_cast<NativeFile>(handle);
    if (want_direct) {
        const DWORD sector = sector_bytes(handle);
        if (sector != 0 && (sector > probe_bytes || probe_bytes % sector != 0)) {
            opened.direct_reason = fmt::format("the volume's sector is {} bytes, which 4096-byte alignment does not fit", sector);
        } else {
            AlignedBuffer probe(probe_bytes);
            int error = 0;
            const uint64_t size = native_file_size(opened.file, path);
            if (size == 0 || read_at_offset(opened.file, probe.data(), probe_bytes, 0, &error) >= 0) {
                opened.direct = true;
                opened.direct_reason = sector ? fmt::format("FILE_FLAG_NO_BUFFERING (sector {} bytes), probed with a 4096-byte read", sector)
                                              : "FILE_FLAG_NO_BUFFERING, probed with a 4096-byte read";
            } else {
                opened.direct_reason = fmt::format("the probe read with FILE_FLAG_NO_BUFFERING failed ({})", windows_error_text(error));
            }
        }
        if (!opened.direct) {
            ::CloseHandle(handle);
            handle = open_handle(path, 0);
            if (handle == INVALID_HANDLE_VALUE) fail_windows("cannot open", path, ::GetLastError());
            opened.file = reinterpret_cast<NativeFile>(handle);
        }
    }
    return opened;
}

void close_native_file(NativeFile file) {
    if (file != no_native_file) ::CloseHandle(to_handle(file));
}

uint64_t native_file_size(NativeFile file, const std::string& path) {
    LARGE_INTEGER size{};
    if (!::GetFileSizeEx(to_handle(file), &size)) fail_windows("cannot stat", path, ::GetLastError());
    return static_cast<uint64_t>(size.QuadPart);
}

FileIdentity native_file_identity(NativeFile file, const std::string& path) {
    BY_HANDLE_FILE_INFORMATION info{};
    if (!::GetFileInformationByHandle(to_handle(file), &info)) fail_windows("cannot stat", path, ::GetLastError());
    return {info.dwVolumeSerialNumber, (uint64_t{info.nFileIndexHigh} << 32) | info.nFileIndexLow};
}

bool path_identity(const std::string& path, FileIdentity* identity, std::string* why) {
    const std::wstring wide = utf8_to_wide(path, "file path");
    HANDLE handle = ::CreateFileW(wide.c_str(), FILE_READ_ATTRIBUTES, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
                                  nullptr, OPEN_EXISTING, FILE_FLAG_BACKUP_SEMANTICS, nullptr);
    if (handle == INVALID_HANDLE_VALUE) {
        *why = windows_error_text(::GetLastError());
        return false;
    }
    BY_HANDLE_FILE_INFORMATION info{};
    const bool ok = ::GetFileInformationByHandle(handle, &info);
    const DWORD error = ::GetLastError();
    ::CloseHandle(handle);
    if (!ok) {
        *why = windows_error_text(error);
        return false;
    }
    *identity = {info.dwVolumeSerialNumber, (uint64_t{info.nFileIndexHigh} << 32) | info.nFileIndexLow};
    return true;
}

int64_t read_at_offset(NativeFile file, uint8_t* buffer, size_t bytes, uint64_t offset, int* error) {
    const ReadEvent event;
    if (!event.handle) {
        *error = static_cast<int>(::GetLastError());
        return -1;
    }
    OVERLAPPED request{};
    request.Offset = static_cast<DWORD>(offset);
    request.OffsetHigh = static_cast<DWORD>(offset >> 32);
    request.hEvent = event.handle;
    // ReadFile takes a 32-bit count; a larger read comes back short and the
    // caller asks again for the rest, as after any short read.
    const DWORD want = static_cast<DWORD>(std::min<size_t>(bytes, DWORD{1} << 30));
    DWORD got = 0;
    if (!::ReadFile(to_handle(file), buffer, want, nullptr, &request)) {
        const DWORD started = ::GetLastError();
        if (started == ERROR_HANDLE_EOF) return 0;
        if (started != ERROR_IO_PENDING) {
            *error = static_cast<int>(started);
            return -1;
        }
    }
    if (!::GetOverlappedResult(to_handle(file), &request, &got, TRUE)) {
        const DWORD finished = ::GetLastError();
        if (finished == ERROR_HANDLE_EOF) return 0;
        *error = static_cast<int>(finished);
        return -1;
    }
    return got;
}

// Windows has no mincore: what its cache holds of a file is not for programs to see.
int64_t cached_pages(NativeFile, uint64_t) { return -1; }
void drop_cached_pages(NativeFile, uint64_t, uint64_t) {}

std::string system_error_text(int error) { return windows_error_text(static_cast<unsigned long>(error)); }

}  // namespace waste::platform
