// direct_file.h — a read-only file that bypasses the page cache when it can.
//
// Direct I/O (O_DIRECT on Linux, F_NOCACHE on macOS, FILE_FLAG_NO_BUFFERING
// on Windows: native_file.h) is probed at open time with a real aligned read:
// some filesystems accept the flag and then refuse the read (upstream once
// had an "O_DIRECT" that was only a comment, and every hit rate it measured
// was the page cache's — docs/anchors.md). When the probe fails the file
// falls back to buffered reads and says why in io_mode_reason(), which info
// and bench report. It never silently pretends.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "platform/native_file.h"

namespace waste::platform {

enum class IoMode { direct, buffered };

class DirectFile {
public:
    DirectFile() = default;
    // want_direct=false opens buffered (reported as "buffered by request").
    DirectFile(const std::string& path, bool want_direct);
    DirectFile(DirectFile&& other) noexcept;
    DirectFile& operator=(DirectFile&& other) noexcept;
    DirectFile(const DirectFile&) = delete;
    DirectFile& operator=(const DirectFile&) = delete;
    ~DirectFile();

    // Reads exactly buffer.size() bytes at offset; throws WASTE_ERR_IO naming
    // the file on a short read or error. In direct mode offset, size and the
    // buffer address must be multiples of 4096.
    void read_at(uint64_t offset, std::span<uint8_t> buffer) const;
    // Buffered-style read of any size and alignment (bounces through an
    // aligned buffer when the file is in direct mode).
    void read_any(uint64_t offset, std::span<uint8_t> buffer) const;

    // Throws WASTE_ERR_IO naming the file when it is no longer what was
    // opened: its size changed (truncated or extended in place: reads past
    // the new end would come back short, or hold bytes never checked at
    // open), or the path now names another file (replaced by rename; this
    // descriptor still reads the old, consistent bytes, but the container on
    // disk is no longer the one opened). Two system calls (fstat, stat), no
    // read. Content rewritten in place at the same size is left to the
    // record checks (CRC-32 of every record read).
    void check_unchanged() const;

    uint64_t size() const { return size_; }
    NativeFile native() const { return file_; }
    IoMode mode() const { return mode_; }
    const std::string& io_mode_reason() const { return reason_; }
    const std::string& path() const { return path_; }

private:
    std::string path_;
    NativeFile file_ = no_native_file;
    uint64_t size_ = 0;
    FileIdentity identity_;   // at open, for check_unchanged
    IoMode mode_ = IoMode::buffered;
    std::string reason_;
};

// Reads a whole small file into a string; throws WASTE_ERR_IO, or
// WASTE_ERR_FORMAT when it is larger than max_bytes.
std::string read_small_file(const std::string& path, uint64_t max_bytes);

}  // namespace waste::platform
