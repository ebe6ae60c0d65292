// synth_keys.h — the override keys the synth accepts, in one table.
//
// An override (waste_synth's JSON, the CLI's --set and --overrides) may name
// only a key that takes effect: a config key the reader or the synth itself
// reads, or one of the synth's container options. Anything else ("vocab",
// a typo, a key the engine ignores) is refused naming it, instead of being
// written into config.json and silently ignored. To accept a new key, add a
// row to the table in synth_keys.cpp.
//
// Deliberately not here: what a key does (synth_config.cpp, the reader).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace waste::synth {

// Every accepted key; a nested key is dotted ("linear_attn_config.head_dim").
const std::vector<std::string>& override_keys();

// Throws waste::Error(WASTE_ERR_INVALID_ARGUMENT) naming the first key of
// `overrides` (an object; nested objects are walked) that is not in the table.
void check_override_keys(const nlohmann::json& overrides);

}  // namespace waste::synth
