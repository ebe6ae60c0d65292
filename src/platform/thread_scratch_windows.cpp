// thread_scratch_windows.cpp — thread_scratch.h on Windows: the buffers hang
// from a fiber-local-storage slot whose callback the system runs at thread
// exit, independent of the C++ runtime's emulated TLS (thread_scratch.h says
// why that matters).
#include "platform/thread_scratch.h"

#include <windows.h>

#include <new>

namespace waste::platform {

namespace {

void WINAPI free_buffers(void* buffers) {
    delete static_cast<detail::ScratchBuffers*>(buffers);
}

DWORD scratch_key() {
    static const DWORD key = ::FlsAlloc(free_buffers);
    if (key == FLS_OUT_OF_INDEXES) throw std::bad_alloc();
    return key;
}

}  // namespace

float* thread_scratch(ScratchSlot slot, size_t floats) {
    const DWORD key = scratch_key();
    auto* buffers = static_cast<detail::ScratchBuffers*>(::FlsGetValue(key));
    if (!buffers) {
        buffers = new detail::ScratchBuffers;
        if (!::FlsSetValue(key, buffers)) {
            delete buffers;
            throw std::bad_alloc();
        }
    }
    return buffers->get(slot, floats);
}

}  // namespace waste::platform
