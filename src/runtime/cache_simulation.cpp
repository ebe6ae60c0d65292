// cache_simulation.cpp — trace replay through CacheIndex, and exact Belady.
#include "runtime/cache_simulation.h"

#include <algorithm>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "platform/error.h"
#include "runtime/cache_index.h"

namespace waste::runtime {
namespace {

// The accesses in replay order: per token, per layer, distinct ids ascending
// (the engine's order, ffn_layer.cpp). group_end[i] marks the last access of
// a layer, after which the pins are released.
struct AccessSequence {
    std::vector<CacheKey> keys;
    std::vector<uint8_t> group_end;
};

AccessSequence sequence_of(const RoutingTrace& trace) {
    AccessSequence seq;
    seq.keys.reserve(trace.ids.size());
    seq.group_end.reserve(trace.ids.size());
    std::vector<int32_t> ids;
    for (uint32_t t = 0; t < trace.tokens; ++t)
        for (uint32_t l = 0; l < trace.layers; ++l) {
            ids.assign(trace.entry(t, l), trace.entry(t, l) + trace.top_k);
            std::sort(ids.begin(), ids.end());
            ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
            for (size_t i = 0; i < ids.size(); ++i) {
                seq.keys.push_back(CacheKey{static_cast<int32_t>(l), ids[i]});
                seq.group_end.push_back(i + 1 == ids.size());
            }
        }
    return seq;
}

}  // namespace

uint64_t distinct_records(const RoutingTrace& trace) {
    std::unordered_set<uint64_t> seen;
    for (uint32_t t = 0; t < trace.tokens; ++t)
        for (uint32_t l = 0; l < trace.layers; ++l)
            for (uint32_t j = 0; j < trace.top_k; ++j) seen.insert(CacheKey{static_cast<int32_t>(l), trace.entry(t, l)[j]}.packed());
    return seen.size();
}

SimulationResult simulate_policy(const RoutingTrace& trace, uint64_t slots, CachePolicyKind policy) {
    const AccessSequence seq = sequence_of(trace);
    CacheIndex index(slots, policy);
    for (size_t i = 0; i < seq.keys.size(); ++i) {
        index.lookup(seq.keys[i].layer, seq.keys[i].expert);
        if (seq.group_end[i]) index.unpin_all();
    }
    return SimulationResult{seq.keys.size(), index.hits(), index.misses()};
}

SimulationResult simulate_belady(const RoutingTrace& trace, uint64_t slots) {
    if (slots == 0) fail(WASTE_ERR_INVALID_ARGUMENT, "belady: 0 slots");
    const AccessSequence seq = sequence_of(trace);
    const size_t n = seq.keys.size();
    constexpr uint64_t never = UINT64_MAX;
    // next_use[i]: the position of the next access to keys[i] after i
    std::vector<uint64_t> next_use(n);
    {
        std::unordered_map<uint64_t, uint64_t> upcoming;
        for (size_t i = n; i-- > 0;) {
            const uint64_t k = seq.keys[i].packed();
            auto found = upcoming.find(k);
            next_use[i] = found == upcoming.end() ? never : found->second;
            upcoming[k] = i;
        }
    }
    // Cached keys ordered by next use, farthest last.
    std::set<std::pair<uint64_t, uint64_t>> by_next;   // (next use, key)
    std::unordered_map<uint64_t, uint64_t> next_of;    // key -> its next use
    std::unordered_set<uint64_t> pinned;
    SimulationResult result;
    result.accesses = n;
    for (size_t i = 0; i < n; ++i) {
        const CacheKey key = seq.keys[i];
        const uint64_t k = key.packed();
        auto found = next_of.find(k);
        if (found != next_of.end()) {
            ++result.hits;
            by_next.erase({found->second, k});
        } else {
            ++result.misses;
            if (next_of.size() >= slots) {
                // The farthest next use among unpinned keys. Positions are
                // distinct, so only "never" ties, and which of those goes
                // changes no hit: the highest key, the first met.
                auto victim = by_next.end();
                for (auto it = by_next.end(); it != by_next.begin();) {
                    --it;
                    if (!pinned.count(it->second)) {
                        victim = it;
                        break;
                    }
                }
                if (victim == by_next.end())
                    fail(WASTE_ERR_BUDGET, "belady: no free slot for expert {} of layer {} (all {} slots pinned)", key.expert,
                         key.layer, slots);
                next_of.erase(victim->second);
                by_next.erase(victim);
            }
        }
        next_of[k] = next_use[i];
        by_next.insert({next_use[i], k});
        pinned.insert(k);
        if (seq.group_end[i]) pinned.clear();
    }
    return result;
}

}  // namespace waste::runtime
