// cache_index.cpp — slots, keys, pins and counters; eviction is the policy's.
#include "runtime/cache_index.h"

#include "platform/error.h"

namespace waste::runtime {

CacheIndex::CacheIndex(uint64_t slots, CachePolicyKind policy) : CacheIndex(slots, make_cache_policy(policy, slots)) {}

CacheIndex::CacheIndex(uint64_t slots, std::unique_ptr<CachePolicy> policy) : slot_count_(slots), policy_(std::move(policy)) {
    if (slot_count_ == 0) fail(WASTE_ERR_INVALID_ARGUMENT, "expert cache: 0 slots");
    WASTE_CHECK(policy_ != nullptr);
    slot_key_.resize(slot_count_);
    occupied_.assign(slot_count_, 0);
    pinned_.assign(slot_count_, 0);
    speculative_.assign(slot_count_, 0);
    free_slots_.reserve(slot_count_);
    for (uint64_t s = slot_count_; s-- > 0;) free_slots_.push_back(s);
}

void CacheIndex::pin(uint64_t slot) {
    if (!pinned_[slot]) {
        pinned_[slot] = 1;
        pinned_list_.push_back(slot);
    }
}

CacheLookup CacheIndex::lookup(int layer, int expert) {
    const CacheKey k{layer, expert};
    CacheLookup result;
    if (auto found = slot_of_.find(k.packed()); found != slot_of_.end()) {
        result.slot = found->second;
        result.hit = true;
        ++hits_;
        if (speculative_[result.slot]) {  // the prefetch already showed this access to the policy
            speculative_[result.slot] = 0;
            result.prefetched = true;
        } else {
            policy_->on_hit(result.slot, k);
        }
        pin(result.slot);
        return result;
    }
    if (free_slots_.empty() && pinned_list_.size() >= slot_count_)
        fail(WASTE_ERR_BUDGET, "expert cache: no free slot for expert {} of layer {} (all {} slots pinned); raise --budget",
             expert, layer, slot_count_);
    ++misses_;
    take_slot(k, &result);
    return result;
}

void CacheIndex::take_slot(CacheKey k, CacheLookup* out) {
    CacheLookup& result = *out;
    policy_->on_miss(k);
    if (!free_slots_.empty()) {
        result.slot = free_slots_.back();
        free_slots_.pop_back();
    } else {
        result.slot = policy_->choose_victim(*this);
        WASTE_CHECK(result.slot < slot_count_ && occupied_[result.slot] && !pinned_[result.slot]);
        result.evicted = true;
        result.evicted_key = slot_key_[result.slot];
        result.evicted_unused = speculative_[result.slot] != 0;
        slot_of_.erase(result.evicted_key.packed());
        policy_->on_remove(result.slot, result.evicted_key);
    }
    slot_key_[result.slot] = k;
    occupied_[result.slot] = 1;
    slot_of_[k.packed()] = result.slot;
    speculative_[result.slot] = 0;
    policy_->on_fill(result.slot, k);
    pin(result.slot);
}

bool CacheIndex::fill_speculative(int layer, int expert, uint64_t reserve, CacheLookup* result) {
    const CacheKey k{layer, expert};
    if (slot_of_.count(k.packed()) || available() <= reserve) return false;
    *result = CacheLookup{};
    take_slot(k, result);
    speculative_[result->slot] = 1;
    return true;
}

void CacheIndex::forget(uint64_t slot) {
    WASTE_CHECK(slot < slot_count_);
    if (!occupied_[slot]) return;
    policy_->on_remove(slot, slot_key_[slot]);
    slot_of_.erase(slot_key_[slot].packed());
    occupied_[slot] = 0;
    speculative_[slot] = 0;
    if (pinned_[slot]) {
        pinned_[slot] = 0;
        std::erase(pinned_list_, slot);
    }
    free_slots_.push_back(slot);
}

void CacheIndex::unpin(uint64_t slot) {
    WASTE_CHECK(slot < slot_count_);
    if (!pinned_[slot]) return;
    pinned_[slot] = 0;
    std::erase(pinned_list_, slot);
}

void CacheIndex::unpin_all() {
    for (uint64_t slot : pinned_list_) pinned_[slot] = 0;
    pinned_list_.clear();
}

}  // namespace waste::runtime
