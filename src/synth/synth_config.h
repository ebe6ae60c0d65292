// synth_config.h — the synth presets and how overrides turn one into a config.
//
// Owns the four preset configs (tiny, tiny-k3, mid, k3) and the rules that
// keep a preset coherent when a few keys are overridden: the KDA/MLA layer
// lists follow num_hidden_layers, top-k and the AttnRes block are clamped to
// what the new sizes allow, and the BOS/EOS ids follow the vocabulary —
// unless the override sets them itself. Overrides are a JSON merge patch
// (RFC 7396) over the config: nested objects merge, null removes a key.
// Only the keys of synth_keys.h's table are accepted. Five are container
// options, not config keys:
//   "tensor_prefix":   string — e.g. "" to write tiny-k3 without a prefix
//   "expert_quant":    string — "VQ3R" (default), "VQ2R" or "VQ4P"
//   "trunk_quant":     string — "Q8G", "Q4G" or "Q3G": every quantised trunk
//                               tensor (embed_tokens and lm_head included) in
//                               that format; absent: Q8G/Q4G (synth_tensors.h)
//   "tokenizer":       bool   — false writes no tokenizer/specials/chat files
//   "reserved_tokens": int    — the last N ids of the vocabulary get neither
//                               a rank nor a special (a reserved tail, as real
//                               releases have); the tokenizer covers the rest
//   "vision":          bool or object — a vision tower and vision.json
//                               (synth_vision.h); an object's keys replace
//                               the tiny tower's vision.json keys
//
// Deliberately not here: tensors and values (synth_tensors.h, synth.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "format/manifest.h"
#include "format/model_config.h"
#include "synth/synth.h"

namespace waste::synth {

struct ResolvedPreset {
    std::string preset;
    std::string arch;                // manifest "arch"
    std::string tensor_prefix;
    nlohmann::ordered_json config;   // as written to the manifest
    format::ModelConfig model;       // the same, parsed by the reader's rules
    format::ExpertQuant quant;
    std::optional<format::TrunkFormat> trunk_quant;  // every quantised trunk tensor; none: per tensor
    bool tokenizer = true;
    int special_slots = 0;           // ids after the ranks reserved for specials
    int64_t reserved_tokens = 0;     // ids after the specials that no token has
    std::optional<nlohmann::ordered_json> vision;  // vision.json when the container has a tower
    std::optional<nlohmann::ordered_json> generation_config;  // generation_config.json, in the release's shape
    bool k3_like = false;            // K3 conventions: A_log padded to head_dim, a vision tensor outside the prefix
    // Config flags the reader settles from the tensors; the synth decides them here.
    bool kda_full_rank_gate = false;  // linear_attn_config.use_full_rank_gate
    bool latent_norm = false;         // latent_moe_use_norm
};

// Throws waste::Error(WASTE_ERR_INVALID_ARGUMENT) naming the preset or key.
ResolvedPreset resolve_preset(const SynthOptions& options);

}  // namespace waste::synth
