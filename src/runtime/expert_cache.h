// expert_cache.h — expert records in RAM, bounded by the memory plan.
//
// A fixed number of record-sized slots (4096-aligned, so a direct read lands
// in place). Which slot holds which record, the pins and the eviction policy
// are runtime/cache_index's; this class owns the storage and the reads. A
// lookup that misses reads the record from its bank into the slot the index
// gave, with every record check; a read that fails leaves the slot empty.
// Records in use by the current layer are pinned; "no free slot" is an error,
// never a silent skip (upstream once skipped experts with exit code 0 —
// docs/anchors.md). Placement never changes a bit of the output.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "format/container.h"
#include "platform/aligned_buffer.h"
#include "runtime/cache_index.h"
#include "runtime/cache_policy.h"

namespace waste::runtime {

struct ExpertCacheStats {
    uint64_t hits = 0, misses = 0, bytes_read = 0;
    double read_seconds = 0;
};

class ExpertCache {
public:
    ExpertCache(const format::Container& container, uint64_t slots, CachePolicyKind policy = default_cache_policy);

    // The checked record of (layer, expert), pinned until unpin_all().
    std::span<const uint8_t> acquire(int layer, int expert);
    void unpin_all();

    uint64_t slots() const { return slot_count_; }
    CachePolicyKind policy() const { return policy_; }
    const ExpertCacheStats& stats() const { return stats_; }
    void reset_stats() { stats_ = {}; }

private:
    const format::Container& container_;
    uint64_t record_bytes_ = 0;
    uint64_t slot_count_ = 0;   // 0 when the container has no experts
    CachePolicyKind policy_;
    platform::AlignedBuffer storage_;   // [slots][record_bytes]
    std::unique_ptr<CacheIndex> index_; // null when slot_count_ is 0
    ExpertCacheStats stats_;
};

}  // namespace waste::runtime
