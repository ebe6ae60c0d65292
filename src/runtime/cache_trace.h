// cache_trace.h — a routing trace: which experts each token chose in each MoE
// layer, read from JSON lines, for replaying through the expert cache
// (runtime/cache_simulation).
//
// One JSON object per line, one line per token, in decode order:
//   {"tok": 0, "layers": [[36, 38, 85, ...], [51, 139, ...], ...]}
// "layers" holds one entry per MoE layer (the same count on every line); an
// entry is an array of expert ids, or an object whose "experts" is one (so a
// route dump that also carries weights reads as is). "tok" and any other
// member are ignored. Blank lines are skipped. Every entry has the same
// number of ids (top-k), no id twice, each in [0, experts).
//
// The file is hostile input: its size, line length, layer count, top-k and
// ids are bounded before they size anything, and every failure names the
// line. Not here: the replay (runtime/cache_simulation).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace waste::runtime {

struct RoutingTrace {
    uint32_t tokens = 0;
    uint32_t layers = 0;    // MoE layers per token
    uint32_t top_k = 0;     // ids per layer entry
    uint32_t experts = 0;   // ids are in [0, experts)
    std::vector<int32_t> ids;  // [tokens][layers][top_k], as written

    const int32_t* entry(uint32_t token, uint32_t layer) const { return ids.data() + (static_cast<size_t>(token) * layers + layer) * top_k; }
    uint64_t working_set() const { return static_cast<uint64_t>(layers) * top_k; }
};

struct TraceLimits {
    uint64_t max_file_bytes = 64ull << 20;   // ~60k tokens of a 60-layer top-8 model
    uint64_t max_line_bytes = 1ull << 20;
    uint32_t max_layers = 1024;
    uint32_t max_top_k = 1024;
    uint32_t max_experts = 1u << 20;
};

// experts: the id bound; 0 = one more than the largest id in the trace.
// Errors: WASTE_ERR_IO (unreadable, too large), WASTE_ERR_FORMAT (naming the
// line and what is wrong with it).
RoutingTrace parse_routing_trace(std::string_view text, uint32_t experts = 0, const TraceLimits& limits = {});
RoutingTrace read_routing_trace(const std::string& path, uint32_t experts = 0, const TraceLimits& limits = {});

// A seeded synthetic trace with statistics unlike Kimi-Linear's, to check
// that a cache policy is not fitted to one model: per layer, expert
// popularity follows a Zipf law over a private ranking; each of the previous
// token's experts is kept with probability `stickiness`, the rest drawn by
// popularity without replacement; every `shift_every` tokens on average (a
// new topic) a `shift_fraction` of each layer's ranking is reshuffled.
// The same options give the same trace on every platform.
struct SyntheticTraceOptions {
    uint32_t tokens = 1000;
    uint32_t layers = 48;
    uint32_t experts = 128;
    uint32_t top_k = 6;
    double zipf = 1.0;            // popularity of rank r ∝ 1 / (r + 1)^zipf
    double stickiness = 0.2;
    double shift_every = 100;     // mean tokens between topic shifts
    double shift_fraction = 0.3;
    uint64_t seed = 1;
};
// WASTE_ERR_INVALID_ARGUMENT naming the option when one is out of range.
RoutingTrace synthetic_routing_trace(const SyntheticTraceOptions& options, const TraceLimits& limits = {});

}  // namespace waste::runtime
