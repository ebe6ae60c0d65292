#include "runtime/expert_cache.h"

#include <chrono>

#include "platform/error.h"

namespace waste::runtime {

ExpertCache::ExpertCache(const format::Container& container, uint64_t slots)
    : container_(container), record_bytes_(container.has_experts() ? container.expert_layout().record_bytes : 0),
      slot_count_(container.has_experts() ? slots : 0) {
    if (!slot_count_) return;
    storage_ = platform::AlignedBuffer(slot_count_ * record_bytes_);
    slot_key_.assign(slot_count_, UINT64_MAX);
    pinned_.assign(slot_count_, false);
    lru_pos_.resize(slot_count_);
    for (uint64_t s = 0; s < slot_count_; ++s) lru_pos_[s] = lru_.insert(lru_.end(), s);
}

std::span<const uint8_t> ExpertCache::acquire(int layer, int expert) {
    const uint64_t k = key(layer, expert);
    uint64_t slot;
    auto found = slot_of_.find(k);
    if (found != slot_of_.end()) {
        slot = found->second;
        ++stats_.hits;
    } else {
        // The least recently used unpinned slot (LRU back to front).
        auto it = lru_.end();
        bool free_slot = false;
        while (it != lru_.begin()) {
            --it;
            if (!pinned_[*it]) {
                free_slot = true;
                break;
            }
        }
        if (!free_slot)
            fail(WASTE_ERR_BUDGET, "expert cache: no free slot for expert {} of layer {} (all {} slots pinned); "
                 "raise --budget", expert, layer, slot_count_);
        slot = *it;
        if (slot_key_[slot] != UINT64_MAX) slot_of_.erase(slot_key_[slot]);
        slot_key_[slot] = UINT64_MAX;
        std::span<uint8_t> buffer(storage_.data() + slot * record_bytes_, record_bytes_);
        const auto start = std::chrono::steady_clock::now();
        container_.read_expert(layer, expert, buffer);
        stats_.read_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        stats_.bytes_read += record_bytes_;
        ++stats_.misses;
        slot_key_[slot] = k;
        slot_of_[k] = slot;
    }
    lru_.splice(lru_.begin(), lru_, lru_pos_[slot]);
    if (!pinned_[slot]) {
        pinned_[slot] = true;
        pinned_list_.push_back(slot);
    }
    return {storage_.data() + slot * record_bytes_, record_bytes_};
}

void ExpertCache::unpin_all() {
    for (uint64_t slot : pinned_list_) pinned_[slot] = false;
    pinned_list_.clear();
}

}  // namespace waste::runtime
