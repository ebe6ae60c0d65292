// memory_lock.h — wiring a region in RAM (mlock), with the reason when the
// system refuses (RLIMIT_MEMLOCK, most often). Upstream found wiring the
// trunk, not the cache, gave the flattest throughput (docs/anchors.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace waste::platform {

struct LockResult {
    bool locked = false;
    std::string note;   // "locked 30.1 MB" or why not, with the limit
};

// Locks [data, data+bytes); never throws for a refusal.
LockResult lock_memory(const void* data, size_t bytes);
// Undoes lock_memory (no-op for an unlocked region).
void unlock_memory(const void* data, size_t bytes);

}  // namespace waste::platform
