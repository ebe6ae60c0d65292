// cmd_synth.cpp — `waste synth`: write a seeded synthetic container.
//
//   waste synth OUT --preset tiny|tiny-k3|mid|k3 [--seed N] [--set key=value ...] [--overrides JSON] [--vision]
//
// --set values are JSON when they parse as JSON (8, 2.5, true, [1,2]) and
// strings otherwise; a dotted key sets a nested one
// (--set linear_attn_config.gate_lower_bound=-3). --set is applied after
// --overrides. A progress line goes to stderr when it is a terminal; the end
// prints the container's size and the write throughput.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_common.h"

namespace waste_cli {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

struct SynthArgs {
    std::string out;
    std::string preset = "tiny";
    uint64_t seed = 1;
    std::vector<std::string> sets;
    std::string overrides;
    bool vision = false;
    bool list = false;
};

struct ProgressLine {
    bool terminal = false;
    Clock::time_point start = Clock::now();
    Clock::time_point last_print{};
    bool printed = false;
};

int report_progress(uint64_t done, uint64_t total, void* user) {
    auto* line = static_cast<ProgressLine*>(user);
    if (!line->terminal) return 0;
    const auto now = Clock::now();
    if (done != total && now - line->last_print < std::chrono::milliseconds(250)) return 0;
    line->last_print = now;
    const double seconds = std::chrono::duration<double>(now - line->start).count();
    const double rate = seconds > 0 ? static_cast<double>(done) / seconds : 0.0;
    fmt::print(stderr, "\rsynth: {} of {} ({:.0f}%), {}/s   ", format_bytes(done), format_bytes(total),
               total ? 100.0 * static_cast<double>(done) / static_cast<double>(total) : 100.0,
               format_bytes(static_cast<uint64_t>(rate)));
    std::fflush(stderr);
    line->printed = true;
    return 0;
}

json parse_set(const std::string& assignment) {
    const size_t equals = assignment.find('=');
    if (equals == std::string::npos || equals == 0)
        throw CLI::ValidationError("--set", "'" + assignment + "' is not key=value");
    const std::string key = assignment.substr(0, equals), text = assignment.substr(equals + 1);
    json value = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (value.is_discarded()) value = text;  // not JSON: a plain string (--set hidden_act=situ)
    json patch = json::object();
    json* at = &patch;
    size_t begin = 0;
    for (size_t dot = key.find('.'); dot != std::string::npos; begin = dot + 1, dot = key.find('.', begin))
        at = &(*at)[key.substr(begin, dot - begin)];
    (*at)[key.substr(begin)] = std::move(value);
    return patch;
}

// Deep merge that keeps nulls (a null is passed on: it removes the config key).
void merge_into(json& target, const json& patch) {
    for (const auto& [key, value] : patch.items()) {
        if (value.is_object() && target.contains(key) && target[key].is_object()) merge_into(target[key], value);
        else target[key] = value;
    }
}

uint64_t directory_bytes(const std::string& path) {
    uint64_t total = 0;
    for (const auto& entry : std::filesystem::directory_iterator(path_from_utf8(path)))
        if (entry.is_regular_file()) total += entry.file_size();
    return total;
}

}  // namespace

void add_synth_command(CLI::App& app) {
    auto args = std::make_shared<SynthArgs>();
    CLI::App* synth = app.add_subcommand("synth", "Write a seeded synthetic container (tiny, tiny-k3, mid, k3)");
    synth->add_option("OUT", args->out, "Container directory to write (its old container files are replaced)");
    synth->add_option("--preset", args->preset, "Preset: tiny, mid, k3, a family's tiny-/mid- shape, or a release's shape such as qwen3-30b-a3b (--list describes them with their sizes)")->capture_default_str();
    synth->add_option("--seed", args->seed, "Seed; the same preset, seed and overrides give identical bytes")->capture_default_str();
    synth->add_option("--set", args->sets,
                      "Override a config key, e.g. --set num_hidden_layers=8; also tensor_prefix=, "
                      "expert_quant=VQ4P, trunk_quant=Q3G, tokenizer=false, vision=true (a tiny vision tower)")
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
        ->default_str("none");
    synth->add_option("--overrides", args->overrides, "A JSON object of config keys (merged before --set)")->default_str("none");
    synth->add_flag("--vision", args->vision,
                    "Add a small random K3 vision tower and vision.json (the same as --set vision=true; needs a tensor_prefix, "
                    "as tiny-k3 and k3 have)");
    synth->add_flag("--list", args->list, "List the presets and exit");
    synth->callback([args] {
        waste_error error{};
        if (args->list) {
            char* text = nullptr;
            if (waste_synth_presets_json(&text, &error) != WASTE_OK) fail_with(error, "synth --list");
            for (const json& preset : json::parse(take_string(text)))
                fmt::print("{:<16} {:>10}  {}\n", preset["name"].get<std::string>(),
                           format_bytes(preset["container_bytes"].get<uint64_t>()), preset["summary"].get<std::string>());
            return;
        }
        if (args->out.empty()) throw CLI::RequiredError("OUT");
        json overrides = json::object();
        if (!args->overrides.empty()) {
            overrides = json::parse(args->overrides, nullptr, /*allow_exceptions=*/false);
            if (overrides.is_discarded() || !overrides.is_object())
                throw CLI::ValidationError("--overrides", "'" + args->overrides + "' is not a JSON object");
        }
        if (args->vision && !overrides.contains("vision")) overrides["vision"] = true;
        for (const std::string& assignment : args->sets) merge_into(overrides, parse_set(assignment));

        ProgressLine line;
        line.terminal = ::isatty(STDERR_FILENO) == 1;
        const std::string overrides_text = overrides.dump();
        const waste_status status = waste_synth(args->out.c_str(), args->preset.c_str(), args->seed,
                                                overrides_text.c_str(), report_progress, &line, &error);
        if (line.printed) fmt::print(stderr, "\n");
        if (status != WASTE_OK) fail_with(error, "synth " + args->preset);
        const double seconds = std::chrono::duration<double>(Clock::now() - line.start).count();
        const uint64_t bytes = directory_bytes(args->out);
        fmt::print("wrote {} (preset {}, seed {}): {} in {:.1f} s, {}/s\n", args->out, args->preset, args->seed,
                   format_bytes(bytes), seconds, format_bytes(static_cast<uint64_t>(static_cast<double>(bytes) / std::max(seconds, 1e-9))));
    });
}

}  // namespace waste_cli
