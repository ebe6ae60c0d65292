// aligned_buffer.h — a heap buffer aligned for direct I/O (4096 bytes).
//
// Large buffers (from large_buffer_bytes) are mapped directly (mmap,
// VirtualAlloc: system_memory.h) and
// unmapped when freed, so their pages go back to the system at once: from
// malloc's heap, a freed 2 MiB write buffer left a hole that the many small
// allocations of a generation split, and the next one extended the heap —
// the 5-minute soak's RSS grew 2 MiB per session save (a chat's /save) until
// it passed the budget. Small ones come from the heap (aligned_alloc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>

namespace waste::platform {

// Direct I/O's unit: file offsets, sizes and buffer addresses are multiples of it.
inline constexpr uint64_t direct_io_block = 4096;

class AlignedBuffer {
public:
    static constexpr size_t alignment = direct_io_block;
    static constexpr size_t large_buffer_bytes = size_t{256} << 10;
    AlignedBuffer() = default;
    explicit AlignedBuffer(size_t bytes);  // throws WASTE_ERR_OUT_OF_MEMORY; zero-filled
    uint8_t* data() { return data_.get(); }
    const uint8_t* data() const { return data_.get(); }
    size_t size() const { return size_; }
    std::span<uint8_t> span() { return {data_.get(), size_}; }
    std::span<const uint8_t> span() const { return {data_.get(), size_}; }

private:
    struct Free {
        size_t mapped;  // bytes mapped; 0: from the heap (value-initialised by default)
        void operator()(uint8_t* p) const;
    };
    std::unique_ptr<uint8_t, Free> data_;
    size_t size_ = 0;
};

}  // namespace waste::platform
