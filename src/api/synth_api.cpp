// synth_api.cpp — the synth entry points of include/waste/waste.h:
// waste_synth and waste_synth_presets_json, over src/synth.
//
// Like every C API file, it catches everything at the boundary (guarded()).
#include <nlohmann/json.hpp>

#include "api/api_support.h"
#include "synth/synth.h"

using nlohmann::json;
using waste::api::guarded;
using waste::api::to_c_string;

extern "C" {

waste_status waste_synth(const char* out_dir, const char* preset, uint64_t seed, const char* overrides_json,
                         waste_progress_fn progress, void* user, waste_error* error) {
    return guarded(error, [&] {
        if (!out_dir || !*out_dir || !preset)
            waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_synth: out_dir and preset are required");
        waste::synth::SynthOptions options;
        options.preset = preset;
        options.seed = seed;
        if (overrides_json) {
            options.overrides = json::parse(overrides_json, nullptr, /*allow_exceptions=*/false);
            if (options.overrides.is_discarded())
                waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_synth: overrides are not valid JSON: {}", overrides_json);
            if (!options.overrides.is_object())
                waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_synth: overrides must be a JSON object, got {}",
                            overrides_json);
        }
        if (progress)
            options.progress = [progress, user](uint64_t done, uint64_t total) { return progress(done, total, user) == 0; };
        waste::synth::write_synthetic_container(out_dir, options);
    });
}

waste_status waste_synth_presets_json(char** out_json, waste_error* error) {
    return guarded(error, [&] {
        if (!out_json) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_synth_presets_json: out_json is required");
        json list = json::array();
        for (const auto& preset : waste::synth::presets()) {
            waste::synth::SynthOptions options;
            options.preset = preset.name;
            list.push_back(json{{"name", preset.name},
                                {"summary", preset.summary},
                                {"container_bytes", waste::synth::synthetic_container_bytes(options)}});
        }
        *out_json = to_c_string(list.dump());
    });
}

}  // extern "C"
