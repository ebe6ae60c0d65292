// aligned_buffer.h — a heap buffer aligned for direct I/O (4096 bytes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>

namespace waste::platform {

class AlignedBuffer {
public:
    static constexpr size_t alignment = 4096;
    AlignedBuffer() = default;
    explicit AlignedBuffer(size_t bytes);  // throws WASTE_ERR_OUT_OF_MEMORY; zero-filled
    uint8_t* data() { return data_.get(); }
    const uint8_t* data() const { return data_.get(); }
    size_t size() const { return size_; }
    std::span<uint8_t> span() { return {data_.get(), size_}; }
    std::span<const uint8_t> span() const { return {data_.get(), size_}; }

private:
    struct Free {
        void operator()(uint8_t* p) const { std::free(p); }
    };
    std::unique_ptr<uint8_t, Free> data_;
    size_t size_ = 0;
};

}  // namespace waste::platform
