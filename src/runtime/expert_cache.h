// expert_cache.h — expert records in RAM, bounded by the memory plan.
//
// A fixed number of record-sized slots (4096-aligned, so a direct read lands
// in place). A lookup that misses reads the record from its bank into a free
// or least-recently-used unpinned slot, with every record check. Records in
// use by the current layer are pinned; "no free slot" is an error, never a
// silent skip (upstream once skipped experts with exit code 0 —
// docs/anchors.md). Placement never changes a bit of the output.
#pragma once

#include <cstdint>
#include <list>
#include <span>
#include <unordered_map>
#include <vector>

#include "format/container.h"
#include "platform/aligned_buffer.h"

namespace waste::runtime {

struct ExpertCacheStats {
    uint64_t hits = 0, misses = 0, bytes_read = 0;
    double read_seconds = 0;
};

class ExpertCache {
public:
    ExpertCache(const format::Container& container, uint64_t slots);

    // The checked record of (layer, expert), pinned until unpin_all().
    std::span<const uint8_t> acquire(int layer, int expert);
    void unpin_all();

    uint64_t slots() const { return slot_count_; }
    const ExpertCacheStats& stats() const { return stats_; }
    void reset_stats() { stats_ = {}; }

private:
    static uint64_t key(int layer, int expert) { return (static_cast<uint64_t>(layer) << 32) | static_cast<uint32_t>(expert); }

    const format::Container& container_;
    uint64_t record_bytes_ = 0;
    uint64_t slot_count_ = 0;
    platform::AlignedBuffer storage_;                     // [slots][record_bytes]
    std::vector<uint64_t> slot_key_;                      // key held by each slot (UINT64_MAX = empty)
    std::vector<bool> pinned_;
    std::vector<uint64_t> pinned_list_;
    std::list<uint64_t> lru_;                             // slots, most recent first
    std::vector<std::list<uint64_t>::iterator> lru_pos_;
    std::unordered_map<uint64_t, uint64_t> slot_of_;      // key -> slot
    ExpertCacheStats stats_;
};

}  // namespace waste::runtime
