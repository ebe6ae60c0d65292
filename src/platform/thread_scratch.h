// thread_scratch.h — a kernel's per-thread scratch buffer, grown on demand and
// kept for the thread's life, so a hot loop allocates once per thread, not per
// call. Each kernel names its own slot, so a kernel that calls another never
// gets the buffer its caller is using.
//
// Why not `thread_local std::vector`: under MinGW-w64 a thread_local with a
// destructor is torn down by winpthreads' emulated TLS, and that destructor
// can run after the thread's TLS block is freed (a page fault at thread exit,
// seen under Wine). Windows frees these buffers from a fiber-local-storage
// callback instead, which the system runs at thread exit; POSIX systems use a
// plain thread_local.
#pragma once

#include <cstddef>

#include "platform/aligned_vector.h"

namespace waste::platform {

enum class ScratchSlot : unsigned {
    vq_int8_rows,     // kernels/int8_matmul.cpp: VQ rows decoded before int8 quantisation
    vq_tile,          // kernels/isa_x86.cpp: a tile of decoded VQ rows
    q4_split_input,   // kernels/isa_avx512.inc: the input split into even and odd lanes
    trunk_tile,       // kernels/trunk_matmul.cpp: a tile of decoded trunk rows
    count
};

// At least `floats` floats, 64-byte aligned, owned by the calling thread; valid
// until this thread asks the same slot for more, or exits. What it holds on
// return is unspecified: the caller writes before it reads. Throws
// std::bad_alloc.
float* thread_scratch(ScratchSlot slot, size_t floats);

namespace detail {
// The buffers of one thread; thread_scratch_*.cpp own one per thread.
struct ScratchBuffers {
    LineAlignedVector<float> buffers[static_cast<unsigned>(ScratchSlot::count)];
    float* get(ScratchSlot slot, size_t floats);
};
}  // namespace detail

}  // namespace waste::platform
