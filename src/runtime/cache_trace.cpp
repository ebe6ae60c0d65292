// cache_trace.cpp — the routing-trace reader: JSON lines, bounded and checked.
#include "runtime/cache_trace.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <cerrno>
#include <cstring>
#include <fstream>

#include <nlohmann/json.hpp>

#include "platform/error.h"
#include "platform/utf8_path.h"
#include "runtime/cache_random.h"

namespace waste::runtime {
namespace {

using nlohmann::json;

// A token object, "layers", an entry object, its "experts": 4 levels; a
// little room for members the reader ignores.
constexpr int max_depth = 8;

// The ids of one layer entry: an array, or an object's "experts" array.
const json& entry_ids(const json& entry, uint64_t line, size_t layer) {
    if (entry.is_array()) return entry;
    if (entry.is_object()) {
        auto found = entry.find("experts");
        if (found != entry.end() && found->is_array()) return *found;
    }
    fail_format("trace line {}: layers[{}] is neither an array of expert ids nor an object with \"experts\"", line, layer);
}

}  // namespace

RoutingTrace parse_routing_trace(std::string_view text, uint32_t experts, const TraceLimits& limits) {
    if (text.size() > limits.max_file_bytes)
        fail(WASTE_ERR_IO, "trace: {} bytes is over the limit of {} bytes", text.size(), limits.max_file_bytes);
    if (experts > limits.max_experts)
        fail(WASTE_ERR_INVALID_ARGUMENT, "trace: experts {} is over the limit of {}", experts, limits.max_experts);
    RoutingTrace trace;
    int64_t largest = -1;
    uint64_t line_number = 0;
    size_t start = 0;
    std::vector<uint8_t> seen;
    while (start < text.size()) {
        size_t end = text.find('\n', start);
        if (end == std::string_view::npos) end = text.size();
        std::string_view line = text.substr(start, end - start);
        start = end + 1;
        ++line_number;
        if (line.size() > limits.max_line_bytes)
            fail_format("trace line {}: {} bytes is over the limit of {} bytes per line", line_number, line.size(), limits.max_line_bytes);
        if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
        // nlohmann copies and destroys values recursively (a manifest of
        // 200,000 nested arrays overflowed the stack, format/manifest.cpp):
        // anything nested deeper than a trace needs is dropped while parsing.
        bool too_deep = false;
        const json::parser_callback_t limit_depth = [&](int depth, json::parse_event_t event, json&) {
            if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) && depth >= max_depth) {
                too_deep = true;
                return false;
            }
            return true;
        };
        const json token = json::parse(line, limit_depth, /*allow_exceptions=*/false);
        if (token.is_discarded()) fail_format("trace line {}: not valid JSON", line_number);
        if (too_deep) fail_format("trace line {}: values nested deeper than {} levels", line_number, max_depth);
        if (!token.is_object()) fail_format("trace line {}: not a JSON object", line_number);
        auto layers_it = token.find("layers");
        if (layers_it == token.end() || !layers_it->is_array())
            fail_format("trace line {}: no \"layers\" array", line_number);
        const json& layers = *layers_it;
        if (layers.empty()) fail_format("trace line {}: \"layers\" is empty", line_number);
        if (layers.size() > limits.max_layers)
            fail_format("trace line {}: {} layers is over the limit of {}", line_number, layers.size(), limits.max_layers);
        if (trace.tokens == 0) {
            trace.layers = static_cast<uint32_t>(layers.size());
            const json& first = entry_ids(layers[0], line_number, 0);
            if (first.empty()) fail_format("trace line {}: layers[0] has no expert ids", line_number);
            if (first.size() > limits.max_top_k)
                fail_format("trace line {}: {} ids per layer is over the limit of {}", line_number, first.size(), limits.max_top_k);
            trace.top_k = static_cast<uint32_t>(first.size());
        } else if (layers.size() != trace.layers) {
            fail_format("trace line {}: {} layers, but the first token has {}", line_number, layers.size(), trace.layers);
        }
        for (size_t l = 0; l < layers.size(); ++l) {
            const json& ids = entry_ids(layers[l], line_number, l);
            if (ids.size() != trace.top_k)
                fail_format("trace line {}: layers[{}] has {} expert ids, but the first token has {} per layer", line_number, l,
                            ids.size(), trace.top_k);
            const size_t first_id = trace.ids.size();
            for (const json& id : ids) {
                if (!id.is_number_integer())
                    fail_format("trace line {}: layers[{}] holds a {}, which is not an expert id", line_number, l,
                                id.is_number() ? "fractional number" : id.type_name());
                const int64_t value = id.get<int64_t>();
                const uint32_t bound = experts ? experts : limits.max_experts;
                if (value < 0 || value >= bound)
                    fail_format("trace line {}: expert id {} in layers[{}] is out of range [0, {})", line_number, value, l, bound);
                for (size_t i = first_id; i < trace.ids.size(); ++i)
                    if (trace.ids[i] == value)
                        fail_format("trace line {}: expert id {} appears twice in layers[{}]", line_number, value, l);
                trace.ids.push_back(static_cast<int32_t>(value));
                largest = std::max(largest, value);
            }
        }
        ++trace.tokens;
    }
    if (trace.tokens == 0) fail_format("trace: no tokens (an empty file?)");
    trace.experts = experts ? experts : static_cast<uint32_t>(largest + 1);
    return trace;
}

RoutingTrace read_routing_trace(const std::string& path, uint32_t experts, const TraceLimits& limits) {
    std::ifstream file(platform::utf8_path(path), std::ios::binary);
    if (!file) fail(WASTE_ERR_IO, "trace {}: cannot open ({})", path, std::strerror(errno));
    std::string text;
    char buffer[1 << 16];
    while (file) {
        file.read(buffer, sizeof buffer);
        const auto got = static_cast<size_t>(file.gcount());
        if (text.size() + got > limits.max_file_bytes)
            fail(WASTE_ERR_IO, "trace {}: larger than the limit of {} bytes", path, limits.max_file_bytes);
        text.append(buffer, got);
    }
    if (file.bad()) fail(WASTE_ERR_IO, "trace {}: read error", path);
    try {
        return parse_routing_trace(text, experts, limits);
    } catch (const Error& e) {
        throw Error(e.status(), path + ": " + e.what());
    }
}

RoutingTrace synthetic_routing_trace(const SyntheticTraceOptions& o, const TraceLimits& limits) {
    if (o.tokens < 1 || o.tokens > (1u << 20)) fail(WASTE_ERR_INVALID_ARGUMENT, "synthetic trace: tokens {} is out of range [1, 2^20]", o.tokens);
    if (o.layers < 1 || o.layers > limits.max_layers)
        fail(WASTE_ERR_INVALID_ARGUMENT, "synthetic trace: layers {} is out of range [1, {}]", o.layers, limits.max_layers);
    if (o.experts < 1 || o.experts > (1u << 16))
        fail(WASTE_ERR_INVALID_ARGUMENT, "synthetic trace: experts {} is out of range [1, 65536]", o.experts);
    if (o.top_k < 1 || o.top_k > o.experts || o.top_k > limits.max_top_k)
        fail(WASTE_ERR_INVALID_ARGUMENT, "synthetic trace: top_k {} is out of range [1, experts {}]", o.top_k, o.experts);
    if (static_cast<uint64_t>(o.tokens) * o.layers * o.top_k > (1ull << 26))
        fail(WASTE_ERR_INVALID_ARGUMENT, "synthetic trace: {} x {} x {} ids is over the limit of 2^26", o.tokens, o.layers, o.top_k);
    if (!(o.zipf >= 0 && o.zipf <= 8)) fail(WASTE_ERR_INVALID_ARGUMENT, "synthetic trace: zipf {} is out of range [0, 8]", o.zipf);
    if (!(o.stickiness >= 0 && o.stickiness <= 1))
        fail(WASTE_ERR_INVALID_ARGUMENT, "synthetic trace: stickiness {} is out of range [0, 1]", o.stickiness);
    if (!(o.shift_every >= 1)) fail(WASTE_ERR_INVALID_ARGUMENT, "synthetic trace: shift_every {} is below 1", o.shift_every);
    if (!(o.shift_fraction >= 0 && o.shift_fraction <= 1))
        fail(WASTE_ERR_INVALID_ARGUMENT, "synthetic trace: shift_fraction {} is out of range [0, 1]", o.shift_fraction);
    SplitMix64 random(o.seed);
    RoutingTrace trace;
    trace.tokens = o.tokens;
    trace.layers = o.layers;
    trace.top_k = o.top_k;
    trace.experts = o.experts;
    trace.ids.reserve(static_cast<size_t>(o.tokens) * o.layers * o.top_k);
    std::vector<double> popularity(o.experts);  // by rank
    for (uint32_t r = 0; r < o.experts; ++r) popularity[r] = 1 / std::pow(r + 1.0, o.zipf);
    // rank_of[layer][expert]: a random ranking per layer
    std::vector<std::vector<uint32_t>> expert_at(o.layers, std::vector<uint32_t>(o.experts));
    auto shuffle = [&](std::vector<uint32_t>& v, size_t count) {  // Fisher-Yates over a random subset of positions
        std::vector<size_t> positions(v.size());
        std::iota(positions.begin(), positions.end(), 0);
        for (size_t i = 0; i < count; ++i) std::swap(positions[i], positions[i + random.below(positions.size() - i)]);
        std::vector<uint32_t> picked(count);
        for (size_t i = 0; i < count; ++i) picked[i] = v[positions[i]];
        for (size_t i = count; i-- > 1;) std::swap(picked[i], picked[random.below(i + 1)]);
        for (size_t i = 0; i < count; ++i) v[positions[i]] = picked[i];
    };
    for (auto& ranking : expert_at) {
        std::iota(ranking.begin(), ranking.end(), 0u);
        shuffle(ranking, ranking.size());
    }
    std::vector<int32_t> previous(static_cast<size_t>(o.layers) * o.top_k, -1), chosen;
    std::vector<double> weight(o.experts);
    std::vector<std::pair<double, uint32_t>> keys;
    const auto shifted = static_cast<size_t>(std::lround(o.shift_fraction * o.experts));
    for (uint32_t t = 0; t < o.tokens; ++t) {
        if (t > 0 && random.unit() < 1 / o.shift_every)
            for (auto& ranking : expert_at) shuffle(ranking, shifted);
        for (uint32_t l = 0; l < o.layers; ++l) {
            chosen.clear();
            for (uint32_t j = 0; j < o.top_k; ++j) {
                const int32_t e = previous[l * o.top_k + j];
                if (e >= 0 && random.unit() < o.stickiness) chosen.push_back(e);
            }
            for (uint32_t r = 0; r < o.experts; ++r) weight[expert_at[l][r]] = popularity[r];
            for (int32_t e : chosen) weight[e] = 0;
            // weighted sampling without replacement (Efraimidis-Spirakis):
            // the largest log(u) / w keys
            keys.clear();
            for (uint32_t e = 0; e < o.experts; ++e)
                if (weight[e] > 0) keys.emplace_back(std::log(random.unit()) / weight[e], e);
            const size_t need = o.top_k - chosen.size();
            std::partial_sort(keys.begin(), keys.begin() + need, keys.end(), std::greater<>());
            for (size_t i = 0; i < need; ++i) chosen.push_back(static_cast<int32_t>(keys[i].second));
            std::sort(chosen.begin(), chosen.end());
            for (uint32_t j = 0; j < o.top_k; ++j) previous[l * o.top_k + j] = chosen[j];
            trace.ids.insert(trace.ids.end(), chosen.begin(), chosen.end());
        }
    }
    return trace;
}

}  // namespace waste::runtime
