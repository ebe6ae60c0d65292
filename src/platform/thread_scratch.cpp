// thread_scratch.cpp — the buffers themselves; which object owns a thread's
// buffers is the platform's part (thread_scratch_posix.cpp, _windows.cpp).
#include "platform/thread_scratch.h"

namespace waste::platform::detail {

float* ScratchBuffers::get(ScratchSlot slot, size_t floats) {
    LineAlignedVector<float>& buffer = buffers[static_cast<unsigned>(slot)];
    if (buffer.size() < floats) buffer.resize(floats);
    return buffer.data();
}

}  // namespace waste::platform::detail
