// expert_cache.cpp — the slots' storage and the reads into them.
#include "runtime/expert_cache.h"

#include <chrono>

#include "platform/error.h"

namespace waste::runtime {

ExpertCache::ExpertCache(const format::Container& container, uint64_t slots, CachePolicyKind policy)
    : container_(container), record_bytes_(container.has_experts() ? container.expert_layout().record_bytes : 0),
      slot_count_(container.has_experts() ? slots : 0), policy_(policy) {
    if (!slot_count_) return;
    storage_ = platform::AlignedBuffer(slot_count_ * record_bytes_);
    index_ = std::make_unique<CacheIndex>(slot_count_, policy);
}

std::span<const uint8_t> ExpertCache::acquire(int layer, int expert) {
    if (!index_) fail(WASTE_ERR_BUDGET, "expert cache: no slot for expert {} of layer {} (the cache has 0 slots)", expert, layer);
    const CacheLookup found = index_->lookup(layer, expert);
    std::span<uint8_t> buffer(storage_.data() + found.slot * record_bytes_, record_bytes_);
    if (found.hit) {
        ++stats_.hits;
        return buffer;
    }
    const auto start = std::chrono::steady_clock::now();
    try {
        container_.read_expert(layer, expert, buffer);
    } catch (...) {
        index_->forget(found.slot);  // the slot holds no valid record now
        throw;
    }
    stats_.read_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    stats_.bytes_read += record_bytes_;
    ++stats_.misses;
    return buffer;
}

void ExpertCache::unpin_all() {
    if (index_) index_->unpin_all();
}

}  // namespace waste::runtime
