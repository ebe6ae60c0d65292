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
    bool prefetched = false; // a hit on a speculative fill's first use
    bool evicted_unused = false;  // the evicted record was a speculative fill never used
};

class CacheIndex final : private SlotView {
public:
    // slots >= 1.
    CacheIndex(uint64_t slots, CachePolicyKind policy);
    CacheIndex(uint64_t slots, std::unique_ptr<CachePolicy> policy);

    // Finds (layer, expert); on a miss assigns it a slot (free, else the
    // policy's victim) that the caller must fill or forget(). Pins the slot.
    CacheLookup lookup(int layer, int expert);
    // A speculative fill (router lookahead): assigns (layer, expert) a slot
    // like a miss, pinned, but counted as neither hit nor miss, and only if
    // the key is absent and a slot is free or evictable with more than
    // `reserve` further slots left for demand lookups. Returns false (and
    // changes nothing) otherwise. The policy sees the access now; the first
    // demand lookup of the record is a hit marked `prefetched` and is not
    // shown to the policy again, so a used prefetch counts one access.
    bool fill_speculative(int layer, int expert, uint64_t reserve, CacheLookup* result);
    // Drops a slot's key (a read into it failed); unpins it.
    void forget(uint64_t slot);
    void unpin(uint64_t slot);
    void unpin_all();

    bool contains(int layer, int expert) const { return slot_of_.count(CacheKey{layer, expert}.packed()) != 0; }
    bool is_pinned(uint64_t slot) const { return pinned_[slot] != 0; }
    // Slots a lookup could still take: free, or occupied and unpinned.
    uint64_t available() const { return slot_count_ - pinned_list_.size(); }
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
    // The miss path shared by lookup and fill_speculative: a free slot, else
    // the policy's victim; pinned.
    void take_slot(CacheKey key, CacheLookup* result);

    uint64_t slot_count_ = 0;
    std::unique_ptr<CachePolicy> policy_;
    std::vector<CacheKey> slot_key_;                  // [slots]
    std::vector<uint8_t> occupied_, pinned_;           // [slots]
    std::vector<uint8_t> speculative_;                 // [slots]: filled by a prefetch, not yet used
    std::vector<uint64_t> pinned_list_;
    std::vector<uint64_t> free_slots_;                // descending, so the lowest is popped first
    std::unordered_map<uint64_t, uint64_t> slot_of_;  // CacheKey::packed() -> slot
    uint64_t hits_ = 0, misses_ = 0;
};

}  // namespace waste::runtime
