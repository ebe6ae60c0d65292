// system_memory_windows.cpp — system_memory.h on Windows. VirtualAlloc's
// pages are zero; large pages need a privilege ordinary users lack, so none
// are asked for.
#include "platform/system_memory.h"

#include <malloc.h>
#include <windows.h>

#include <algorithm>
#include <bit>
#include <thread>

namespace waste::platform {

void* map_resident_pages(size_t bytes) {
    void* memory = ::VirtualAlloc(nullptr, bytes, MEM_RESERVE | MEM_COMMIT, PAGE_READWRITE);
    if (!memory) return nullptr;
    for (size_t i = 0; i < bytes; i += 4096) static_cast<volatile unsigned char*>(memory)[i] = 0;
    return memory;
}

void unmap_pages(void* pages, size_t) { ::VirtualFree(pages, 0, MEM_RELEASE); }

// The C runtime has no aligned_alloc; its own aligned heap is _aligned_malloc.
void* allocate_aligned(size_t alignment, size_t bytes) { return ::_aligned_malloc(bytes, alignment); }
void free_aligned(void* block) { ::_aligned_free(block); }

unsigned usable_cpus() {
    DWORD_PTR process = 0, system = 0;
    if (::GetProcessAffinityMask(::GetCurrentProcess(), &process, &system) && process != 0)
        return static_cast<unsigned>(std::popcount(static_cast<unsigned long long>(process)));
    return std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace waste::platform
