// cache_policy.cpp — LRU, upstream's sampled LFRU, and ours (reuse): see the
// header for what each ranks by. All three are deterministic.
#include "runtime/cache_policy.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <unordered_map>

#include "platform/error.h"
#include "runtime/cache_random.h"

namespace waste::runtime {

CachePolicyKind parse_cache_policy(std::string_view name) {
    if (name == "reuse" || name == "default") return CachePolicyKind::reuse;
    if (name == "lru") return CachePolicyKind::lru;
    if (name == "lfru") return CachePolicyKind::lfru;
    fail(WASTE_ERR_INVALID_ARGUMENT, "cache policy '{}' is not one of reuse, lru, lfru", name);
}

const char* cache_policy_name(CachePolicyKind kind) {
    switch (kind) {
        case CachePolicyKind::reuse: return "reuse";
        case CachePolicyKind::lru: return "lru";
        case CachePolicyKind::lfru: return "lfru";
    }
    return "unknown";
}

std::vector<std::string> cache_policy_names() { return {"reuse", "lru", "lfru"}; }

namespace {

constexpr uint64_t no_slot = UINT64_MAX;

// ------------------------------------------------------------------- LRU

// An intrusive list of slots, most recent at the head.
class LruPolicy final : public CachePolicy {
public:
    explicit LruPolicy(uint64_t slots) : prev_(slots, no_slot), next_(slots, no_slot), linked_(slots, 0) {}
    CachePolicyKind kind() const override { return CachePolicyKind::lru; }
    void on_hit(uint64_t slot, CacheKey) override { touch(slot); }
    void on_miss(CacheKey) override {}
    void on_fill(uint64_t slot, CacheKey) override { touch(slot); }
    void on_remove(uint64_t slot, CacheKey) override { unlink(slot); }
    uint64_t choose_victim(const SlotView& view) override {
        // Pinned slots are the few most recent ones: the walk from the tail
        // passes at most pinned_count of them.
        for (uint64_t s = tail_; s != no_slot; s = prev_[s])
            if (!view.pinned(s)) return s;
        fail(WASTE_ERR_INTERNAL, "lru: no unpinned slot to evict");
    }

private:
    void unlink(uint64_t s) {
        if (!linked_[s]) return;
        (prev_[s] != no_slot ? next_[prev_[s]] : head_) = next_[s];
        (next_[s] != no_slot ? prev_[next_[s]] : tail_) = prev_[s];
        prev_[s] = next_[s] = no_slot;
        linked_[s] = 0;
    }
    void touch(uint64_t s) {
        unlink(s);
        next_[s] = head_;
        if (head_ != no_slot) prev_[head_] = s;
        head_ = s;
        if (tail_ == no_slot) tail_ = s;
        linked_[s] = 1;
    }
    std::vector<uint64_t> prev_, next_;
    std::vector<uint8_t> linked_;
    uint64_t head_ = no_slot, tail_ = no_slot;
};

// ------------------------------------------------------------------ LFRU

class LfruPolicy final : public CachePolicy {
public:
    static constexpr int samples = 16;         // upstream's sample count
    static constexpr uint64_t seed = 0x57a57e; // any fixed value: runs must repeat

    explicit LfruPolicy(uint64_t slots) : uses_(slots, 0), last_(slots, 0), random_(seed) {}
    CachePolicyKind kind() const override { return CachePolicyKind::lfru; }
    void on_hit(uint64_t slot, CacheKey key) override {
        uses_[slot] = ++history_[key.packed()];
        last_[slot] = ++clock_;
    }
    void on_miss(CacheKey key) override { ++history_[key.packed()]; }
    void on_fill(uint64_t slot, CacheKey key) override {
        uses_[slot] = history_[key.packed()];
        last_[slot] = ++clock_;
    }
    void on_remove(uint64_t, CacheKey) override {}
    uint64_t choose_victim(const SlotView& view) override {
        const uint64_t n = view.slots();
        uint64_t best = no_slot;
        int taken = 0;
        // Pinned draws are redrawn; at most half the slots are pinned in the
        // engine, so 16 samples rarely need more than ~32 draws. The cap keeps
        // a nearly all-pinned cache from spinning; the scan below then decides.
        for (int draw = 0; draw < 64 * samples && taken < samples; ++draw) {
            const uint64_t s = random_.below(n);
            if (view.pinned(s) || !view.occupied(s)) continue;
            ++taken;
            if (best == no_slot || worse(s, best)) best = s;
        }
        if (best == no_slot)
            for (uint64_t s = 0; s < n; ++s)
                if (!view.pinned(s) && view.occupied(s) && (best == no_slot || worse(s, best))) best = s;
        return best;
    }

private:
    bool worse(uint64_t a, uint64_t b) const { return uses_[a] != uses_[b] ? uses_[a] < uses_[b] : last_[a] < last_[b]; }
    std::vector<uint64_t> uses_, last_;                // [slots]
    std::unordered_map<uint64_t, uint64_t> history_;   // key -> uses, kept across evictions
    uint64_t clock_ = 0;
    SplitMix64 random_;
};

}  // namespace

std::unique_ptr<CachePolicy> make_reuse_policy(uint64_t slots);  // cache_policy_reuse.cpp

std::unique_ptr<CachePolicy> make_cache_policy(CachePolicyKind kind, uint64_t slots) {
    switch (kind) {
        case CachePolicyKind::lru: return std::make_unique<LruPolicy>(slots);
        case CachePolicyKind::lfru: return std::make_unique<LfruPolicy>(slots);
        case CachePolicyKind::reuse: return make_reuse_policy(slots);
    }
    fail(WASTE_ERR_INVALID_ARGUMENT, "cache policy {} is not one of reuse, lru, lfru", static_cast<uint32_t>(kind));
}

}  // namespace waste::runtime
