// system_memory.h — memory and CPUs as the operating system hands them out:
// whole pages (returned to the system when freed), aligned heap blocks, the
// CPUs this process may use. One
// implementation per system family (system_memory_posix.cpp,
// system_memory_windows.cpp).
#pragma once

#include <cstddef>

namespace waste::platform {

// `bytes` (a multiple of 4096) of zeroed pages, every page touched so that it
// is resident at once, as huge pages where the system allows; nullptr when
// the system refuses.
void* map_resident_pages(size_t bytes);
void unmap_pages(void* pages, size_t bytes);

// A heap block aligned to `alignment` (a power of two dividing `bytes`), or
// nullptr; freed by free_aligned.
void* allocate_aligned(size_t alignment, size_t bytes);
void free_aligned(void* block);

// The CPUs this process may run on (its affinity), at least 1.
unsigned usable_cpus();

}  // namespace waste::platform
