// output_file_windows.cpp — what OutputFile asks of Windows.
//
// path.tmp is opened without write or delete sharing: that is the lock (a
// second writer's open fails with a sharing violation), held until the file
// is renamed over path through the same handle (FileRenameInfo) or deleted
// through it (FileDispositionInfo), so no other writer can slip in between.
// Writes go through the system cache: FILE_FLAG_NO_BUFFERING is used for
// reads (native_file_windows.cpp), and io_mode_reason() says so.
#include "platform/output_file.h"

#include <windows.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "platform/error.h"
#include "platform/windows_text.h"

namespace waste::platform {
namespace {

HANDLE handle_of(NativeFile file) { return reinterpret_cast<HANDLE>(file); }

int last_error() { return static_cast<int>(::GetLastError()); }

}  // namespace

void OutputFile::open_temporary() {
    reason_ = options_.want_direct ? "buffered: on Windows files are written through the system cache"
                                   : "buffered by request";
    const std::wstring wide = utf8_to_wide(tmp_path_, "output path");
    HANDLE handle = ::CreateFileW(wide.c_str(), GENERIC_WRITE | DELETE, FILE_SHARE_READ, nullptr, OPEN_ALWAYS,
                                  FILE_ATTRIBUTE_NORMAL, nullptr);
    if (handle == INVALID_HANDLE_VALUE) {
        const DWORD error = ::GetLastError();
        if (error == ERROR_SHARING_VIOLATION)
            fail(WASTE_ERR_IO, "cannot write {}: another writer is writing it ({} is open for writing; nothing was published)",
                 path_, tmp_path_);
        fail_io("creating " + tmp_path_, static_cast<int>(error));
    }
    file_ = reinterpret_cast<NativeFile>(handle);
    FILE_END_OF_FILE_INFO empty{};
    if (!::SetFileInformationByHandle(handle, FileEndOfFileInfo, &empty, sizeof empty)) {
        const int error = last_error();
        discard_temporary();
        fail_io("emptying " + tmp_path_, error);
    }
}

// The open in open_temporary() is the lock (see the top of this file).
void OutputFile::lock_temporary() {}

void OutputFile::write_at(const uint8_t* data, size_t bytes, uint64_t offset) {
    size_t done = 0;
    while (done < bytes) {
        OVERLAPPED at{};
        at.Offset = static_cast<DWORD>(offset + done);
        at.OffsetHigh = static_cast<DWORD>((offset + done) >> 32);
        const DWORD want = static_cast<DWORD>(std::min<size_t>(bytes - done, DWORD{1} << 30));
        DWORD wrote = 0;
        if (!::WriteFile(handle_of(file_), data + done, want, &wrote, &at))
            fail_io(fmt::format("writing {} bytes at offset {} of {}", bytes - done, offset + done, tmp_path_), last_error());
        if (wrote == 0)
            fail_io(fmt::format("writing at offset {} of {} (nothing written)", offset + done, tmp_path_), ERROR_WRITE_FAULT);
        done += wrote;
    }
}

void OutputFile::truncate_to_size() {
    FILE_END_OF_FILE_INFO end{};
    end.EndOfFile.QuadPart = static_cast<LONGLONG>(size_);
    if (!::SetFileInformationByHandle(handle_of(file_), FileEndOfFileInfo, &end, sizeof end))
        fail_io(fmt::format("setting the size of {} to {}", tmp_path_, size_), last_error());
}

void OutputFile::publish_temporary() {
    HANDLE handle = handle_of(file_);
    if (!::FlushFileBuffers(handle)) fail_io("flushing " + tmp_path_ + " to disk", last_error());
    const std::wstring target = utf8_to_wide(path_, "output path");
    // FILE_RENAME_INFO ends in the new name, of variable length.
    std::vector<unsigned char> rename(sizeof(FILE_RENAME_INFO) + target.size() * sizeof(wchar_t));
    auto* info = reinterpret_cast<FILE_RENAME_INFO*>(rename.data());
    info->ReplaceIfExists = TRUE;
    info->RootDirectory = nullptr;
    info->FileNameLength = static_cast<DWORD>(target.size() * sizeof(wchar_t));
    std::memcpy(info->FileName, target.data(), target.size() * sizeof(wchar_t));
    if (!::SetFileInformationByHandle(handle, FileRenameInfo, info, static_cast<DWORD>(rename.size())))
        fail_io("renaming " + tmp_path_ + " over it", last_error());
    file_ = no_native_file;
    if (!::CloseHandle(handle)) fail_io("close of " + path_, last_error());
}

void OutputFile::discard_temporary() noexcept {
    if (file_ == no_native_file) return;  // published, or never ours
    FILE_DISPOSITION_INFO remove{};
    remove.DeleteFile = TRUE;
    ::SetFileInformationByHandle(handle_of(file_), FileDispositionInfo, &remove, sizeof remove);
    ::CloseHandle(handle_of(file_));
    file_ = no_native_file;
}

// Windows gives ordinary programs no way to flush a directory; NTFS journals
// the rename itself, and the renamed file's bytes were flushed before it.
void sync_directory(const std::string&) {}

}  // namespace waste::platform
