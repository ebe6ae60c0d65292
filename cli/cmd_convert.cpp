// cmd_convert.cpp — `waste convert`, and the --source half of `waste verify`.
//
//   waste convert SRC_DIR OUT [--quant VQ3R|VQ2R|VQ4P] [--stages N] [--entries N] [--jobs N]
//                 [--seed N] [--sample-experts N] [--train-vectors N] [--iterations N]
//                 [--small-matrices f32|quantized] [--reclaim dry|on] [--json]
//
// One line per finished layer on stdout (its relative weight error and
// seconds per expert); a progress bar with an ETA on stderr when it is a
// terminal; the summary at the end (--json: the summary JSON alone).
#include <unistd.h>

#include <chrono>
#include <cstdio>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_common.h"

namespace waste_cli {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

struct ConvertArgs {
    std::string source, out, quant = "VQ3R", reclaim = "off", small_matrices = "f32", trunk_matrices = "q4",
                trunk_scales = "fitted";
    int stages = 0, entries = 0, sample_experts = 16, iterations = 12;
    unsigned jobs = 0;
    uint64_t seed = 1, train_vectors = 65536;
    bool json_output = false;
};

struct ConvertProgress {
    bool terminal = false, json_output = false;
    Clock::time_point start = Clock::now();
    Clock::time_point last_print{};
    bool line_open = false;
    uint64_t resumed_bytes = 0;  // work a resumed run found done (not part of the rate)
    bool first = true;
};

std::string format_duration(double seconds) {
    if (!(seconds >= 0) || seconds > 1e7) return "?";
    const auto s = static_cast<uint64_t>(seconds);
    if (s >= 3600) return fmt::format("{}h{:02}m", s / 3600, s / 60 % 60);
    if (s >= 60) return fmt::format("{}m{:02}s", s / 60, s % 60);
    return fmt::format("{}s", s);
}

void clear_line(ConvertProgress& p) {
    if (p.line_open) fmt::print(stderr, "\r{:<78}\r", "");
    p.line_open = false;
}

int on_progress(uint64_t done, uint64_t total, void* user) {
    auto* p = static_cast<ConvertProgress*>(user);
    if (p->first) {
        p->first = false;
        p->resumed_bytes = done;
    }
    if (!p->terminal) return 0;
    const auto now = Clock::now();
    if (done != total && now - p->last_print < std::chrono::milliseconds(250)) return 0;
    p->last_print = now;
    const double seconds = std::chrono::duration<double>(now - p->start).count();
    const double rate = seconds > 0 ? static_cast<double>(done - std::min(done, p->resumed_bytes)) / seconds : 0;
    const double eta = rate > 0 ? static_cast<double>(total - done) / rate : -1;
    const double fraction = total ? static_cast<double>(done) / static_cast<double>(total) : 1.0;
    const int width = 30, filled = static_cast<int>(fraction * width);
    fmt::print(stderr, "\r[{}{}] {:5.1f}%  {} of {}  ETA {}   ", std::string(static_cast<size_t>(filled), '#'),
               std::string(static_cast<size_t>(width - filled), '.'), 100 * fraction, format_bytes(done),
               format_bytes(total), format_duration(eta));
    std::fflush(stderr);
    p->line_open = true;
    return 0;
}

void on_event(const char* text, void* user) {
    auto* p = static_cast<ConvertProgress*>(user);
    if (p->json_output) return;
    const json e = json::parse(text);
    clear_line(*p);
    if (e.contains("reclaim")) {
        fmt::print("{} {}\n", e["deleted"].get<bool>() ? "reclaimed (deleted)" : "reclaimable (dry run)",
                   e["reclaim"].get<std::string>());
    } else if (e.value("resumed", false)) {
        fmt::print("{:<10} already converted (resumed)\n", e["unit"].get<std::string>());
    } else if (e.contains("error")) {
        fmt::print("{:<10} relative weight error {:.4f}, {:.3f} s per expert, {:.1f} s\n", e["unit"].get<std::string>(),
                   e["error"].get<double>(), e["seconds_per_expert"].get<double>(), e["seconds"].get<double>());
    } else {
        fmt::print("{:<10} done in {:.1f} s\n", e["unit"].get<std::string>(), e["seconds"].get<double>());
    }
    std::fflush(stdout);
}

}  // namespace

void add_convert_command(CLI::App& app) {
    auto a = std::make_shared<ConvertArgs>();
    CLI::App* convert = app.add_subcommand("convert", "Convert a Hugging Face checkpoint or a GGUF file to a container");
    convert->add_option("SOURCE", a->source,
                        "Checkpoint directory (config.json, safetensors shards, tokenizer), or a GGUF file (docs/GGUF.md)")
        ->required();
    convert->add_option("OUT", a->out, "Container directory to write (resumed when it holds this conversion's ledger)")
        ->required();
    convert->add_option("--quant", a->quant, "Expert format: VQ3R, VQ2R or VQ4P")->default_str("VQ3R");
    convert->add_option("--stages", a->stages, "Residual VQ stages (2, 3 or 4)")->default_str("the format's (3 for VQ3R)");
    convert->add_option("--entries", a->entries, "Centroids per codebook")->default_str("the format's: 256, or 64 for VQ4P");
    add_threads_option(convert, a->jobs, "--jobs", "Threads; never changes the output")->default_str("one per core");
    convert->add_option("--seed", a->seed, "Seed of the k-means and of the fitting sample")->default_val(1);
    convert->add_option("--sample-experts", a->sample_experts, "Experts per layer the codebooks are fitted on")->default_val(16);
    convert->add_option("--train-vectors", a->train_vectors, "8-vectors per (layer, matrix kind) for k-means")->default_val(65536);
    convert->add_option("--iterations", a->iterations, "Lloyd iterations per stage at most")->default_val(12);
    convert->add_option("--small-matrices", a->small_matrices,
                        "Trunk matrices under 65,536 values: f32 (the container convention) or quantized like large "
                        "ones (Q8G embedding and LM head, Q4G the rest)")
        ->default_val("f32")
        ->check(CLI::IsMember({"f32", "quantized"}));
    convert->add_option("--trunk-matrices", a->trunk_matrices,
                        "Trunk matrices other than the embedding and LM head (attention, dense FFN, shared experts, "
                        "router): q4 (Q4G) or q8 (Q8G: the most precise conversion; docs/QUALITY.md)")
        ->default_val("q4")
        ->check(CLI::IsMember({"q4", "q8"}));
    convert->add_option("--trunk-scales", a->trunk_scales,
                        "Q4G group scales: fitted (least squared error) or absmax (container-v0's convention, "
                        "upstream's bytes)")
        ->default_val("fitted")
        ->check(CLI::IsMember({"fitted", "absmax"}));
    convert->add_option("--reclaim", a->reclaim, "dry: list source shards that could be deleted; on: delete them once "
                                                "everything they hold is converted and verified")
        ->default_val("off")
        ->check(CLI::IsMember({"off", "dry", "on"}));
    convert->add_flag("--json", a->json_output, "Print the summary as JSON only");
    convert->callback([a] {
        const json options = {{"quant", a->quant},         {"stages", a->stages},
                              {"entries", a->entries},     {"jobs", a->jobs},
                              {"seed", a->seed},           {"sample_experts", a->sample_experts},
                              {"train_vectors", a->train_vectors}, {"iterations", a->iterations},
                              {"reclaim", a->reclaim},     {"small_matrices", a->small_matrices},
                              {"trunk_matrices", a->trunk_matrices}, {"trunk_scales", a->trunk_scales}};
        ConvertProgress progress;
        progress.terminal = ::isatty(STDERR_FILENO) == 1;
        progress.json_output = a->json_output;
        char* summary_text = nullptr;
        waste_error error{};
        const std::string options_text = options.dump();
        const waste_status status = waste_convert(a->source.c_str(), a->out.c_str(), options_text.c_str(), on_progress,
                                                  on_event, &progress, &summary_text, &error);
        clear_line(progress);
        if (status != WASTE_OK) fail_with(error, "convert " + a->source);
        const std::string text = take_string(summary_text);
        if (a->json_output) {
            fmt::print("{}\n", text);
            return;
        }
        const json s = json::parse(text);
        fmt::print("wrote {} ({}, {} {} bits/weight): {} trunk tensors, {} MoE layers, mean relative expert error "
                   "{:.4f} (max {:.4f}), {:.3f} s per expert, {:.1f} s{}\n",
                   a->out, s["arch"].get<std::string>(), s["expert_quant"]["fmt"].get<std::string>(),
                   s["expert_quant"]["bits_per_weight"].dump(), s["trunk_tensors"].get<uint64_t>(), s["layers"].size(),
                   s["mean_error"].get<double>(), s["max_error"].get<double>(),
                   s["mean_seconds_per_expert"].get<double>(), s["seconds"].get<double>(),
                   s.value("already_complete", false) ? " (already complete)" : "");
        if (!s["skipped"].empty()) fmt::print("skipped {} tensors outside the text model\n", s["skipped"].size());
        if (s.value("skipped_mtp_tensors", 0) > 0)
            fmt::print("  of which {} belong to multi-token-prediction layers (not used for next-token decoding)\n",
                       s["skipped_mtp_tensors"].get<int>());
        if (s.value("vision", false)) fmt::print("vision tower converted (vision.json written)\n");
        for (const auto& warning : s.value("warnings", nlohmann::json::array())) fmt::print(stderr, "warning: {}\n", warning.get<std::string>());
    });
}

void verify_against_source(const std::string& model, const std::string& source, double max_error, bool json_output) {
    const json options = {{"max_expert_error", max_error}};
    const std::string options_text = options.dump();
    char* report_text = nullptr;
    waste_error error{};
    if (waste_verify_source(model.c_str(), source.c_str(), options_text.c_str(), nullptr, nullptr, &report_text,
                            &error) != WASTE_OK)
        fail_with(error, "verify " + model + " --source " + source);
    const std::string text = take_string(report_text);
    const json report = json::parse(text);
    if (json_output) {
        fmt::print("{}\n", text);
    } else {
        for (const json& layer : report["layers"])
            fmt::print("layer {:<4} {} experts: relative error {:.4f} (gate {:.4f}, up {:.4f}, down {:.4f})\n",
                       layer["layer"].get<int>(), layer["experts"].get<int>(), layer["error"].get<double>(),
                       layer["error_gate"].get<double>(), layer["error_up"].get<double>(),
                       layer["error_down"].get<double>());
        double worst = 0;
        for (const json& t : report["trunk"]) worst = std::max(worst, t["error"].get<double>() / t["limit"].get<double>());
        fmt::print("trunk: {} tensors, worst error at {:.0f}% of its limit; expert limit {}\n", report["trunk"].size(),
                   100 * worst, report["expert_limit"].get<double>());
    }
    if (!report["ok"].get<bool>()) {
        std::string message = "verify against the source failed:";
        for (const json& f : report["failures"]) message += "\n  " + f.get<std::string>();
        throw RuntimeFailure{message};
    }
    if (!json_output) fmt::print("{}: every record passed its checks and CRC-32 and matches {}\n", model, source);
}

}  // namespace waste_cli
