// native_file.h — the operating system's side of a read-only file: open it
// (bypassing the page cache when asked and the filesystem allows it), learn
// its size and identity, read at an offset, close it.
//
// One implementation per system family (native_file_posix.cpp: Linux, macOS;
// native_file_windows.cpp), chosen by CMakeLists.txt; everything above it
// (DirectFile, the asynchronous readers, the converter's readers) is shared.
// docs/PLATFORMS.md describes each.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace waste::platform {

// A file descriptor on POSIX, a HANDLE (opened for overlapped I/O) on Windows.
using NativeFile = intptr_t;
constexpr NativeFile no_native_file = -1;

// Where a file lives: two handles name the same file when these are equal.
struct FileIdentity {
    uint64_t device = 0, file = 0;   // st_dev/st_ino; volume serial number/file index
    bool operator==(const FileIdentity&) const = default;
};

struct OpenedFile {
    NativeFile file = no_native_file;
    bool direct = false;          // the page cache is bypassed
    std::string direct_reason;    // how direct I/O was probed, or why it is off
};

// Opens a regular file for reading; want_direct asks for unbuffered reads,
// which must then be 4096-aligned in offset, size and address. Direct mode is
// probed with a real aligned read and falls back to buffered with the reason.
// Throws WASTE_ERR_IO naming the path (missing, not a regular file, ...).
// Paths are UTF-8 on every system.
OpenedFile open_for_reading(const std::string& path, bool want_direct);
void close_native_file(NativeFile file);

// Size and identity of an open file, and identity of whatever the path names
// now (false when nothing does, with the reason in *why).
uint64_t native_file_size(NativeFile file, const std::string& path);
FileIdentity native_file_identity(NativeFile file, const std::string& path);
bool path_identity(const std::string& path, FileIdentity* identity, std::string* why);

// Reads up to `bytes` at `offset`: the count read (0 at the end of the file),
// or -1 with *error set to the system's code (errno, or GetLastError()).
// Safe to call from many threads on one file at once. Interrupted reads are
// retried inside.
int64_t read_at_offset(NativeFile file, uint8_t* buffer, size_t bytes, uint64_t offset, int* error);

// Pages of the first `bytes` of an open file that are in the page cache
// (mincore), or -1 where the system cannot tell (Windows).
int64_t cached_pages(NativeFile file, uint64_t bytes);
// Asks the system to drop the file's cached pages in [offset, offset+bytes),
// bytes 0 meaning to the end (posix_fadvise; a no-op where there is no such
// call). Advice only: a failure changes nothing.
void drop_cached_pages(NativeFile file, uint64_t offset = 0, uint64_t bytes = 0);

// The system's words for a code from read_at_offset (strerror, or
// FormatMessage on Windows).
std::string system_error_text(int error);

}  // namespace waste::platform
