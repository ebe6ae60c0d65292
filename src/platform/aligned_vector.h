// aligned_vector.h — a std::vector whose data starts on a 64-byte line.
//
// For activations the SIMD kernels read 16 floats at a time: from an
// ordinary heap block (16-byte aligned) every such load straddles two cache
// lines. Prefill's expert inputs are held this way (model/forward.h); a mid
// gate matrix against 8 tokens measured faster with aligned inputs
// (tests/kernels_test.cpp, KernelSpeed.VqMatmul; docs/bench-log/decode-and-prefill.md,
// "Figures moved from code comments").
#pragma once

#include <cstddef>
#include <new>
#include <vector>

namespace waste::platform {

template <typename T>
struct LineAlignedAllocator {
    using value_type = T;
    static constexpr std::align_val_t alignment{64};
    LineAlignedAllocator() = default;
    template <typename U>
    LineAlignedAllocator(const LineAlignedAllocator<U>&) {}
    T* allocate(size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), alignment)); }
    void deallocate(T* p, size_t) { ::operator delete(p, alignment); }
    template <typename U>
    bool operator==(const LineAlignedAllocator<U>&) const { return true; }
};

template <typename T>
using LineAlignedVector = std::vector<T, LineAlignedAllocator<T>>;

}  // namespace waste::platform
