#include "platform/direct_file.h"

#include <algorithm>
#include <cstring>

#include "platform/aligned_buffer.h"
#include "platform/error.h"

namespace waste::platform {
namespace {

void read_fully(NativeFile file, uint64_t offset, std::span<uint8_t> buffer, const std::string& path) {
    size_t done = 0;
    while (done < buffer.size()) {
        int error = 0;
        const int64_t got = read_at_offset(file, buffer.data() + done, buffer.size() - done, offset + done, &error);
        if (got < 0)
            fail(WASTE_ERR_IO, "read of {} bytes at offset {} in {}: {}", buffer.size(), offset, path, system_error_text(error));
        if (got == 0)
            fail(WASTE_ERR_IO, "short read in {}: {} of {} bytes at offset {} (file truncated?)", path, done,
                 buffer.size(), offset);
        done += static_cast<size_t>(got);
    }
}

}  // namespace

DirectFile::DirectFile(const std::string& path, bool want_direct) : path_(path) {
    OpenedFile opened = open_for_reading(path, want_direct);
    file_ = opened.file;
    mode_ = opened.direct ? IoMode::direct : IoMode::buffered;
    reason_ = std::move(opened.direct_reason);
    try {
        size_ = native_file_size(file_, path_);
        identity_ = native_file_identity(file_, path_);
    } catch (...) {
        close_native_file(file_);
        file_ = no_native_file;
        throw;
    }
}

DirectFile::DirectFile(DirectFile&& other) noexcept { *this = std::move(other); }

DirectFile& DirectFile::operator=(DirectFile&& other) noexcept {
    if (this != &other) {
        close_native_file(file_);
        path_ = std::move(other.path_);
        file_ = other.file_;
        size_ = other.size_;
        identity_ = other.identity_;
        mode_ = other.mode_;
        reason_ = std::move(other.reason_);
        other.file_ = no_native_file;
    }
    return *this;
}

DirectFile::~DirectFile() { close_native_file(file_); }

void DirectFile::check_unchanged() const {
    const uint64_t size_now = native_file_size(file_, path_);
    if (size_now != size_)
        fail(WASTE_ERR_IO, "{} changed size while open: {} bytes when opened, {} now (truncated or rewritten in place)", path_,
             size_, size_now);
    FileIdentity on_path;
    std::string why;
    if (!path_identity(path_, &on_path, &why)) fail(WASTE_ERR_IO, "{} was removed or renamed while open: {}", path_, why);
    if (on_path != identity_)
        fail(WASTE_ERR_IO, "{} was replaced while open (file {} when opened, the path now names file {})", path_,
             identity_.file, on_path.file);
}

void DirectFile::read_at(uint64_t offset, std::span<uint8_t> buffer) const {
    if (offset > size_ || buffer.size() > size_ - offset)
        fail(WASTE_ERR_IO, "read of {} bytes at offset {} runs past the end of {} ({} bytes)", buffer.size(), offset,
             path_, size_);
    if (mode_ == IoMode::direct) {
        WASTE_CHECK(offset % direct_io_block == 0 && buffer.size() % direct_io_block == 0 &&
                    reinterpret_cast<uintptr_t>(buffer.data()) % direct_io_block == 0);
    }
    read_fully(file_, offset, buffer, path_);
}

void DirectFile::read_any(uint64_t offset, std::span<uint8_t> buffer) const {
    if (offset > size_ || buffer.size() > size_ - offset)
        fail(WASTE_ERR_IO, "read of {} bytes at offset {} runs past the end of {} ({} bytes)", buffer.size(), offset,
             path_, size_);
    if (mode_ != IoMode::direct) {
        read_fully(file_, offset, buffer, path_);
        return;
    }
    // Bounce through aligned chunks; the last chunk may end past EOF, which a
    // direct read answers with a short count — so we read what exists.
    // The bounce buffer is sized to the read, not the chunk: load_trunk calls
    // this for every small tensor, and zero-filling 8 MiB each time made
    // loading a 400 KB trunk take a second.
    constexpr uint64_t chunk = uint64_t{8} << 20;
    AlignedBuffer bounce(std::min<uint64_t>(chunk, buffer.size()) + 2 * direct_io_block);
    uint64_t done = 0;
    while (done < buffer.size()) {
        const uint64_t want_start = offset + done;
        const uint64_t aligned_start = want_start / direct_io_block * direct_io_block;
        const uint64_t take = std::min<uint64_t>(buffer.size() - done, chunk);
        const uint64_t aligned_end =
            std::min<uint64_t>((want_start + take + direct_io_block - 1) / direct_io_block * direct_io_block,
                               (size_ + direct_io_block - 1) / direct_io_block * direct_io_block);
        size_t read_bytes = 0;
        while (read_bytes < aligned_end - aligned_start) {
            int error = 0;
            const int64_t got = read_at_offset(file_, bounce.data() + read_bytes, aligned_end - aligned_start - read_bytes,
                                               aligned_start + read_bytes, &error);
            if (got < 0) fail(WASTE_ERR_IO, "direct read failed in {}: {}", path_, system_error_text(error));
            if (got == 0) break;
            read_bytes += static_cast<size_t>(got);
        }
        if (read_bytes < want_start - aligned_start + take)
            fail(WASTE_ERR_IO, "short read in {} at offset {} (file truncated?)", path_, want_start);
        std::memcpy(buffer.data() + done, bounce.data() + (want_start - aligned_start), take);
        done += take;
    }
}

std::string read_small_file(const std::string& path, uint64_t max_bytes) {
    DirectFile file(path, false);
    if (file.size() > max_bytes) fail(WASTE_ERR_FORMAT, "{} is {} bytes, more than the {} allowed", path, file.size(), max_bytes);
    std::string text(file.size(), '\0');
    file.read_at(0, {reinterpret_cast<uint8_t*>(text.data()), text.size()});
    return text;
}

}  // namespace waste::platform
