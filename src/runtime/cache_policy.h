// cache_policy.h — which cached expert record to evict: the policy interface
// of runtime/cache_index and its three policies.
//
//   lru    the least recently used unpinned record.
//   lfru   upstream's sampled LFRU: 16 random unpinned records, evict the one
//          used least often (counts kept across evictions), the least
//          recently used among equals. Deterministic RNG.
//   reuse  ours (the default): hit density with the MoE's clock. A record's
//          age is counted in visits of its own layer (a decode token visits
//          every MoE layer once, in order); the probability that a record
//          idle for `age` visits is used at the next one is learned online
//          (per use-count class, decayed) from every record seen; the
//          unpinned record expected to give the fewest hits per unit of cache
//          space-time — counting how soon its layer comes round again — is
//          evicted. Nothing in it is fitted to one trace
//          (cache_policy_reuse.cpp; docs/bench-log/cache-policies.md for the
//          measurements).
//
// A policy only ranks; runtime/cache_index owns the slots, the keys and the
// pins, and only asks for a victim when an unpinned occupied slot exists.
// Not here: storage and reads (runtime/expert_cache).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace waste::runtime {

enum class CachePolicyKind : uint32_t {
    reuse = 1,  // ours, the default
    lru = 2,
    lfru = 3,
};

constexpr CachePolicyKind default_cache_policy = CachePolicyKind::reuse;

// "lru", "lfru", "reuse" (and "default") -> the kind; WASTE_ERR_INVALID_ARGUMENT
// naming the text otherwise.
CachePolicyKind parse_cache_policy(std::string_view name);
const char* cache_policy_name(CachePolicyKind kind);
// The policy names, default first: for help texts and JSON.
std::vector<std::string> cache_policy_names();

// One expert record: (MoE layer index as the container numbers it, expert id).
struct CacheKey {
    int32_t layer = 0;
    int32_t expert = 0;
    uint64_t packed() const { return (static_cast<uint64_t>(static_cast<uint32_t>(layer)) << 32) | static_cast<uint32_t>(expert); }
    bool operator==(const CacheKey&) const = default;
};

// What a policy may look at when it chooses a victim.
class SlotView {
public:
    virtual ~SlotView() = default;
    virtual uint64_t slots() const = 0;
    virtual bool pinned(uint64_t slot) const = 0;
    virtual bool occupied(uint64_t slot) const = 0;
    virtual CacheKey key(uint64_t slot) const = 0;
};

class CachePolicy {
public:
    virtual ~CachePolicy() = default;
    virtual CachePolicyKind kind() const = 0;
    // Every lookup calls exactly one of on_hit / on_miss first.
    virtual void on_hit(uint64_t slot, CacheKey key) = 0;
    virtual void on_miss(CacheKey key) = 0;
    // After a miss: slot now holds key (a free slot, or the victim's).
    virtual void on_fill(uint64_t slot, CacheKey key) = 0;
    // slot no longer holds key (evicted, or forgotten after a failed read).
    virtual void on_remove(uint64_t slot, CacheKey key) = 0;
    // An occupied, unpinned slot; called only when one exists.
    virtual uint64_t choose_victim(const SlotView& view) = 0;
};

std::unique_ptr<CachePolicy> make_cache_policy(CachePolicyKind kind, uint64_t slots);

}  // namespace waste::runtime
