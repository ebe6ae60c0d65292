// thread_scratch_posix.cpp — thread_scratch.h on POSIX systems: the buffers
// are a thread_local, freed by its destructor at thread exit.
#include "platform/thread_scratch.h"

namespace waste::platform {

float* thread_scratch(ScratchSlot slot, size_t floats) {
    thread_local detail::ScratchBuffers buffers;
    return buffers.get(slot, floats);
}

}  // namespace waste::platform
