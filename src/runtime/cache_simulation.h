// cache_simulation.h — replays a routing trace through the expert cache's
// own bookkeeping (runtime/cache_index, the code the engine runs) and through
// Belady's clairvoyant optimum under the same constraint, for `waste
// simulate`.
//
// The replay does what a decode step does: token by token, MoE layer by
// layer, each distinct expert of the layer looked up once in ascending id and
// pinned, then every pin released before the next layer. A cache smaller than
// one layer's experts fails as the engine does (WASTE_ERR_BUDGET).
//
// Belady: on a miss, evict the unpinned record whose next use is farthest in
// the future (never again counts as farthest). With the
// current layer's records pinned this is still optimal — the records the
// current layer holds are needed now, and the exchange argument of Belady's
// proof goes through for the rest (tests/simulate_test.cpp checks it against
// a brute-force search).
#pragma once

#include <cstdint>
#include <string>

#include "runtime/cache_policy.h"
#include "runtime/cache_trace.h"

namespace waste::runtime {

struct SimulationResult {
    uint64_t accesses = 0, hits = 0, misses = 0;
    double hit_rate() const { return accesses ? static_cast<double>(hits) / static_cast<double>(accesses) : 0; }
};

SimulationResult simulate_policy(const RoutingTrace& trace, uint64_t slots, CachePolicyKind policy);
SimulationResult simulate_belady(const RoutingTrace& trace, uint64_t slots);

// Distinct (layer, expert) records the trace touches: more slots than this
// never evict.
uint64_t distinct_records(const RoutingTrace& trace);

}  // namespace waste::runtime
