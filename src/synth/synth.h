// synth.h — seeded synthetic containers of the Kimi family, at any scale.
//
// Presets: "tiny" (CI, ~1 MB, Kimi-Linear-like), "tiny-k3" (every K3 text
// feature, tiny), "mid" (hidden 1024, 12 layers, 64 experts top-8: the
// benchmark shape), "k3" (K3's real dimensions; shrink layers/experts with
// overrides). Written streaming through format::ContainerWriter with bounded
// memory: one tensor or one expert record at a time.
// Router weights and biases are drawn so that routing varies from token to
// token and spreads over the experts, as a trained router's does.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace waste::synth {

struct Preset {
    std::string name;
    std::string summary;
};

const std::vector<Preset>& presets();

struct SynthOptions {
    std::string preset = "tiny";
    uint64_t seed = 1;
    // Config keys to replace, as a JSON merge patch, only those of
    // synth_keys.h's table; "tensor_prefix", "expert_quant", "tokenizer" and
    // "reserved_tokens" are container options (synth_config.h).
    nlohmann::json overrides = nlohmann::json::object();
    // Called now and then with (done, total) bytes; return false to cancel.
    std::function<bool(uint64_t, uint64_t)> progress;
};

// The config a preset produces with these overrides (validated).
nlohmann::json preset_config(const SynthOptions& options);

// Writes the container; throws waste::Error. The same options give a
// byte-identical container.
void write_synthetic_container(const std::string& out_dir, const SynthOptions& options);

// The bytes write_synthetic_container will write, manifest.json excepted
// (the `total` its progress callback reports).
uint64_t synthetic_container_bytes(const SynthOptions& options);

}  // namespace waste::synth
