// convert_api.cpp — waste_convert and waste_verify_source over src/convert.
//
// Like every C API file, it catches everything at the boundary (guarded()).
#include <algorithm>

#include <nlohmann/json.hpp>

#include "api/api_support.h"
#include "convert/converter.h"
#include "convert/verify_source.h"

using nlohmann::json;
using waste::api::guarded;
using waste::api::to_c_string;

namespace {

json parse_options(const char* options_json, const char* where) {
    if (!options_json) return json::object();
    json options = json::parse(options_json, nullptr, /*allow_exceptions=*/false);
    if (options.is_discarded() || !options.is_object())
        waste::fail(WASTE_ERR_INVALID_ARGUMENT, "{}: options are not a JSON object: {}", where, options_json);
    return options;
}

template <typename T>
T member(const json& options, const char* key, T fallback, const char* where) {
    if (!options.contains(key)) return fallback;
    try {
        return options[key].get<T>();
    } catch (const json::exception&) {
        waste::fail(WASTE_ERR_INVALID_ARGUMENT, "{}: option {} has the wrong type: {}", where, key, options[key].dump());
    }
}

}  // namespace

extern "C" {

waste_status waste_convert(const char* source_dir, const char* out_dir, const char* options_json,
                           waste_progress_fn progress, waste_event_fn event, void* user, char** out_summary_json,
                           waste_error* error) {
    return guarded(error, [&] {
        constexpr const char* where = "waste_convert";
        if (!source_dir || !*source_dir || !out_dir || !*out_dir)
            waste::fail(WASTE_ERR_INVALID_ARGUMENT, "{}: source_dir and out_dir are required", where);
        const json o = parse_options(options_json, where);
        for (const auto& [key, value] : o.items()) {
            static const char* known[] = {"quant", "stages", "entries", "jobs", "seed", "sample_experts",
                                          "train_vectors", "iterations", "reclaim", "small_matrices",
                                          "trunk_matrices", "trunk_scales"};
            if (std::find(std::begin(known), std::end(known), key) == std::end(known))
                waste::fail(WASTE_ERR_INVALID_ARGUMENT, "{}: unknown option \"{}\"", where, key);
        }
        waste::convert::ConvertOptions options;
        options.quant = member<std::string>(o, "quant", options.quant, where);
        options.stages = member<int>(o, "stages", 0, where);
        options.entries = member<int>(o, "entries", 0, where);
        options.jobs = member<unsigned>(o, "jobs", 0, where);
        options.seed = member<uint64_t>(o, "seed", options.seed, where);
        options.sample_experts = member<int>(o, "sample_experts", options.sample_experts, where);
        options.train_vectors = member<uint64_t>(o, "train_vectors", options.train_vectors, where);
        options.iterations = member<int>(o, "iterations", options.iterations, where);
        waste::api::check_threads(options.jobs, "waste_convert: jobs");
        if (options.sample_experts < 1 || options.train_vectors < 1 || options.iterations < 0 || options.iterations > 1000)
            waste::fail(WASTE_ERR_INVALID_ARGUMENT, "{}: sample_experts {} / train_vectors {} / iterations {} out of range",
                        where, options.sample_experts, options.train_vectors, options.iterations);
        const std::string small_matrices = member<std::string>(o, "small_matrices", "f32", where);
        if (small_matrices != "f32" && small_matrices != "quantized")
            waste::fail(WASTE_ERR_INVALID_ARGUMENT, "{}: small_matrices \"{}\" is not f32 or quantized", where, small_matrices);
        options.quantize_small_matrices = small_matrices == "quantized";
        const std::string trunk_matrices = member<std::string>(o, "trunk_matrices", "q4", where);
        if (trunk_matrices != "q4" && trunk_matrices != "q8")
            waste::fail(WASTE_ERR_INVALID_ARGUMENT, "{}: trunk_matrices \"{}\" is not q4 or q8", where, trunk_matrices);
        options.trunk_matrices = trunk_matrices == "q8" ? waste::format::TrunkFormat::q8g : waste::format::TrunkFormat::q4g;
        const std::string trunk_scales = member<std::string>(o, "trunk_scales", "fitted", where);
        if (trunk_scales != "fitted" && trunk_scales != "absmax")
            waste::fail(WASTE_ERR_INVALID_ARGUMENT, "{}: trunk_scales \"{}\" is not fitted or absmax", where, trunk_scales);
        options.trunk_scales =
            trunk_scales == "fitted" ? waste::format::TrunkScales::fitted : waste::format::TrunkScales::absmax;
        const std::string reclaim = member<std::string>(o, "reclaim", "off", where);
        if (reclaim == "off") options.reclaim = waste::convert::Reclaim::off;
        else if (reclaim == "dry") options.reclaim = waste::convert::Reclaim::dry;
        else if (reclaim == "on") options.reclaim = waste::convert::Reclaim::on;
        else waste::fail(WASTE_ERR_INVALID_ARGUMENT, "{}: reclaim \"{}\" is not off, dry or on", where, reclaim);
        if (progress)
            options.progress = [progress, user](uint64_t done, uint64_t total) { return progress(done, total, user) == 0; };
        if (event)
            options.event = [event, user](const json& e) { event(e.dump().c_str(), user); };
        const json summary = waste::convert::convert_checkpoint(source_dir, out_dir, options);
        if (out_summary_json) *out_summary_json = to_c_string(summary.dump());
    });
}

waste_status waste_verify_source(const char* model_dir, const char* source_dir, const char* options_json,
                                 waste_progress_fn progress, void* user, char** out_report_json, waste_error* error) {
    return guarded(error, [&] {
        constexpr const char* where = "waste_verify_source";
        if (!model_dir || !*model_dir || !source_dir || !*source_dir)
            waste::fail(WASTE_ERR_INVALID_ARGUMENT, "{}: model_dir and source_dir are required", where);
        const json o = parse_options(options_json, where);
        waste::convert::VerifyOptions options;
        options.max_expert_error = member<double>(o, "max_expert_error", 0.0, where);
        if (!(options.max_expert_error >= 0))
            waste::fail(WASTE_ERR_INVALID_ARGUMENT, "{}: max_expert_error {} must be >= 0", where, options.max_expert_error);
        if (progress)
            options.progress = [progress, user](uint64_t done, uint64_t total) { return progress(done, total, user) == 0; };
        const json report = waste::convert::verify_against_source(model_dir, source_dir, options);
        if (out_report_json) *out_report_json = to_c_string(report.dump());
    });
}

}  // extern "C"
