// cache_index.h — the bookkeeping of the expert cache, with no storage: N
// slots, which (layer, expert) each holds, which are pinned, hits and misses,
// and a pluggable eviction policy (runtime/cache_policy). The engine's cache
// (runtime/expert_cache) and `waste simulate` (runtime/cache_simulation) run
// this same code, so a simulated hit rate is the engine's.
//
// A lookup pins its slot until unpin_all(). A pinned slot is never evicted;
// a miss with every slot pinned is WASTE_ERR_BUDGET naming the record, never
// a silent skip (upstream once skipped experts with exit code 0 —
// docs/anchors.md). Free slots are used before anything is evicted, lowest
// first.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "runtime/cache_policy.h"

namespace waste::runtime {

struct CacheLookup {
    uint64_t slot = 0;
    bool hit = false;
    bool evicted = false;   // a miss that displaced evicted_key
    CacheKey evicted_key;
};

class CacheIndex final : private SlotView {
public:
    // slots >= 1.
    CacheIndex(uint64_t slots, CachePolicyKind policy);
    CacheIndex(uint64_t slots, std::unique_ptr<CachePolicy> policy);

    // Finds (layer, expert); on a miss assigns it a slot (free, else the
    // policy's victim) that the caller must fill or forget(). Pins the slot.
    CacheLookup lookup(int layer, int expert);
    // Drops a slot's key (a read into it failed); unpins it.
    void forget(uint64_t slot);
    void unpin_all();

    bool contains(int layer, int expert) const { return slot_of_.count(CacheKey{layer, expert}.packed()) != 0; }
    uint64_t slots() const override { return slot_count_; }
    uint64_t pinned_count() const { return pinned_list_.size(); }
    CachePolicyKind policy() const { return policy_->kind(); }
    uint64_t hits() const { return hits_; }
    uint64_t misses() const { return misses_; }
    void reset_counters() { hits_ = misses_ = 0; }

private:
    bool pinned(uint64_t slot) const override { return pinned_[slot] != 0; }
    bool occupied(uint64_t slot) const override { return occupied_[slot] != 0; }
    CacheKey key(uint64_t slot) const override { return slot_key_[slot]; }
    void pin(uint64_t slot);

    uint64_t slot_count_ = 0;
    std::unique_ptr<CachePolicy> policy_;
    std::vector<CacheKey> slot_key_;                  // [slots]
    std::vector<uint8_t> occupied_, pinned_;           // [slots]
    std::vector<uint64_t> pinned_list_;
    std::vector<uint64_t> free_slots_;                // descending, so the lowest is popped first
    std::unordered_map<uint64_t, uint64_t> slot_of_;  // CacheKey::packed() -> slot
    uint64_t hits_ = 0, misses_ = 0;
};

}  // namespace waste::runtime
