// cache_api.cpp — the C API of the expert-cache policies: their names, and
// `waste simulate` (a routing trace replayed through runtime/cache_index and
// Belady's optimum). The JSON in and out is documented in waste.h.
#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/api_support.h"
#include "api/cache_api.h"
#include "runtime/cache_simulation.h"
#include "runtime/cache_trace.h"

using nlohmann::json;
using waste::api::guarded;
using waste::api::to_c_string;
namespace runtime = waste::runtime;

namespace waste::api {

runtime::CachePolicyKind cache_policy_of(uint32_t value) {
    switch (value) {
        case WASTE_CACHE_POLICY_DEFAULT: return runtime::default_cache_policy;
        case WASTE_CACHE_POLICY_REUSE: return runtime::CachePolicyKind::reuse;
        case WASTE_CACHE_POLICY_LRU: return runtime::CachePolicyKind::lru;
        case WASTE_CACHE_POLICY_LFRU: return runtime::CachePolicyKind::lfru;
    }
    fail(WASTE_ERR_INVALID_ARGUMENT, "cache_policy {} is not a waste_cache_policy (0-3)", value);
}

}  // namespace waste::api

namespace {

static_assert(static_cast<uint32_t>(runtime::CachePolicyKind::reuse) == WASTE_CACHE_POLICY_REUSE);
static_assert(static_cast<uint32_t>(runtime::CachePolicyKind::lru) == WASTE_CACHE_POLICY_LRU);
static_assert(static_cast<uint32_t>(runtime::CachePolicyKind::lfru) == WASTE_CACHE_POLICY_LFRU);

// A member that is a number or an array of numbers -> the list.
std::vector<double> number_list(const json& value, const char* name) {
    std::vector<double> out;
    if (value.is_number()) out.push_back(value.get<double>());
    else if (value.is_array() && !value.empty() && value.size() <= 64) {
        for (const json& item : value) {
            if (!item.is_number()) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "simulate: \"{}\" holds a {}, not a number", name, item.type_name());
            out.push_back(item.get<double>());
        }
    } else {
        waste::fail(WASTE_ERR_INVALID_ARGUMENT, "simulate: \"{}\" must be a number or an array of 1 to 64 numbers", name);
    }
    return out;
}

runtime::SyntheticTraceOptions synthetic_options(const json& spec) {
    if (!spec.is_object()) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "simulate: \"synthetic\" must be an object");
    runtime::SyntheticTraceOptions o;
    for (const auto& item : spec.items()) {
        // named copies, not a structured binding: clang 14 cannot capture a binding in the lambda below
        const std::string name = item.key();
        const json& value = item.value();
        if (!value.is_number()) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "simulate: synthetic.{} must be a number", name);
        const double x = value.get<double>();
        auto count = [&](uint32_t& field) {
            if (!(x >= 0 && x <= 4294967295.0 && x == std::floor(x)))
                waste::fail(WASTE_ERR_INVALID_ARGUMENT, "simulate: synthetic.{} {} is not a count", name, value.dump());
            field = static_cast<uint32_t>(x);
        };
        if (name == "tokens") count(o.tokens);
        else if (name == "layers") count(o.layers);
        else if (name == "experts") count(o.experts);
        else if (name == "top_k") count(o.top_k);
        else if (name == "zipf") o.zipf = x;
        else if (name == "stickiness") o.stickiness = x;
        else if (name == "shift_every") o.shift_every = x;
        else if (name == "shift_fraction") o.shift_fraction = x;
        else if (name == "seed") {
            if (!value.is_number_unsigned()) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "simulate: synthetic.seed {} is not an unsigned integer", value.dump());
            o.seed = value.get<uint64_t>();
        } else waste::fail(WASTE_ERR_INVALID_ARGUMENT, "simulate: unknown synthetic option \"{}\"", name);
    }
    return o;
}

json counts(const runtime::SimulationResult& r) {
    return {{"hits", r.hits}, {"misses", r.misses}, {"hit_rate", r.hit_rate()}};
}

}  // namespace

extern "C" {

const char* waste_cache_policy_name(uint32_t policy) {
    if (policy > WASTE_CACHE_POLICY_LFRU) return nullptr;
    return runtime::cache_policy_name(waste::api::cache_policy_of(policy));
}

waste_status waste_cache_policy_parse(const char* name, uint32_t* out_policy, waste_error* error) {
    return guarded(error, [&] {
        if (!name || !out_policy) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_cache_policy_parse: name and out_policy are required");
        *out_policy = std::string_view(name) == "default" ? static_cast<uint32_t>(WASTE_CACHE_POLICY_DEFAULT)
                                                          : static_cast<uint32_t>(runtime::parse_cache_policy(name));
    });
}

waste_status waste_simulate_trace_json(const char* trace_path, const char* options_json, char** out_json, waste_error* error) {
    return guarded(error, [&] {
        if (!options_json || !out_json) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_simulate_trace_json: options_json and out_json are required");
        *out_json = nullptr;
        const json options = json::parse(options_json, nullptr, /*allow_exceptions=*/false);
        if (options.is_discarded() || !options.is_object())
            waste::fail(WASTE_ERR_INVALID_ARGUMENT, "simulate: the options are not a JSON object");
        std::vector<double> slots_list, multiples;
        std::vector<runtime::CachePolicyKind> policies{runtime::default_cache_policy};
        bool belady = true;
        uint32_t experts = 0;
        const json* synthetic = nullptr;
        for (const auto& [name, value] : options.items()) {
            if (name == "slots") slots_list = number_list(value, "slots");
            else if (name == "multiple") multiples = number_list(value, "multiple");
            else if (name == "policy") {
                if (!value.is_string()) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "simulate: \"policy\" must be a string");
                const std::string policy = value.get<std::string>();
                policies.clear();
                if (policy == "all")
                    for (const std::string& each : runtime::cache_policy_names()) policies.push_back(runtime::parse_cache_policy(each));
                else policies.push_back(runtime::parse_cache_policy(policy));
            } else if (name == "belady") {
                if (!value.is_boolean()) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "simulate: \"belady\" must be true or false");
                belady = value.get<bool>();
            } else if (name == "experts") {
                if (!value.is_number_unsigned() || value.get<uint64_t>() < 1 || value.get<uint64_t>() > runtime::TraceLimits{}.max_experts)
                    waste::fail(WASTE_ERR_INVALID_ARGUMENT, "simulate: \"experts\" {} is not in [1, {}]", value.dump(),
                                runtime::TraceLimits{}.max_experts);
                experts = value.get<uint32_t>();
            } else if (name == "synthetic") synthetic = &value;
            else waste::fail(WASTE_ERR_INVALID_ARGUMENT, "simulate: unknown option \"{}\"", name);
        }
        if (slots_list.empty() == multiples.empty())
            waste::fail(WASTE_ERR_INVALID_ARGUMENT, "simulate: give the cache size as exactly one of \"slots\" and \"multiple\"");
        if (synthetic && experts) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "simulate: \"experts\" bounds a trace file; a synthetic trace sets synthetic.experts");
        if (synthetic && trace_path) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "simulate: a trace file and \"synthetic\" both given");
        if (!synthetic && !trace_path) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "simulate: no trace file (or \"synthetic\") given");

        const runtime::RoutingTrace trace = synthetic ? runtime::synthetic_routing_trace(synthetic_options(*synthetic))
                                                      : runtime::read_routing_trace(trace_path, experts);
        const double working_set = static_cast<double>(trace.working_set());
        // Sizes past this many records are refused: the index allocates per slot.
        constexpr double max_slots = 1u << 26;
        std::vector<uint64_t> sizes;
        for (double s : slots_list) {
            if (!(s >= 1 && s <= max_slots && s == std::floor(s)))
                waste::fail(WASTE_ERR_INVALID_ARGUMENT, "simulate: slots {} is not a whole number in [1, 2^26]", s);
            sizes.push_back(static_cast<uint64_t>(s));
        }
        for (double m : multiples) {
            if (!(m > 0 && m * working_set <= max_slots))
                waste::fail(WASTE_ERR_INVALID_ARGUMENT, "simulate: multiple {} is not in (0, {}]", m, max_slots / working_set);
            sizes.push_back(std::max<uint64_t>(1, static_cast<uint64_t>(std::llround(m * working_set))));
        }

        json out;
        out["trace"] = synthetic ? std::string("synthetic") : std::string(trace_path);
        out["tokens"] = trace.tokens;
        out["layers"] = trace.layers;
        out["top_k"] = trace.top_k;
        out["experts"] = trace.experts;
        out["working_set"] = trace.working_set();
        out["accesses"] = trace.ids.size();  // ids are distinct within a layer entry: one lookup each
        out["distinct_records"] = runtime::distinct_records(trace);
        out["runs"] = json::array();
        for (uint64_t slots : sizes) {
            json run;
            run["slots"] = slots;
            run["multiple"] = static_cast<double>(slots) / working_set;
            run["policies"] = json::array();
            for (runtime::CachePolicyKind policy : policies) {
                const runtime::SimulationResult r = runtime::simulate_policy(trace, slots, policy);
                json entry = counts(r);
                entry["policy"] = runtime::cache_policy_name(policy);
                run["policies"].push_back(entry);
            }
            if (belady) {
                const runtime::SimulationResult r = runtime::simulate_belady(trace, slots);
                run["belady"] = counts(r);
            }
            out["runs"].push_back(run);
        }
        *out_json = to_c_string(out.dump());
    });
}

}  // extern "C"
