// system_memory_posix.cpp — system_memory.h on Linux and macOS.
#include "platform/system_memory.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

#if defined(__linux__)
#include <sched.h>
#endif

namespace waste::platform {

void* map_resident_pages(size_t bytes) {
    void* memory = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) return nullptr;
#if defined(MADV_HUGEPAGE)
    (void)::madvise(memory, bytes, MADV_HUGEPAGE);
#endif
    for (size_t i = 0; i < bytes; i += 4096) static_cast<volatile unsigned char*>(memory)[i] = 0;
    return memory;
}

void unmap_pages(void* pages, size_t bytes) { ::munmap(pages, bytes); }

void* allocate_aligned(size_t alignment, size_t bytes) { return std::aligned_alloc(alignment, bytes); }
void free_aligned(void* block) { std::free(block); }

unsigned usable_cpus() {
#if defined(__linux__)
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) return static_cast<unsigned>(CPU_COUNT(&set));
#endif
    return std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace waste::platform
