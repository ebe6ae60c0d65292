// cmd_simulate.cpp — `waste simulate`: replays a routing trace through the
// expert cache's own bookkeeping and prints each policy's hit rate beside
// Belady's optimum (waste_simulate_trace_json; the JSON is documented in
// include/waste/waste.h).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_common.h"

namespace waste_cli {
namespace {

using nlohmann::json;

struct SimulateArgs {
    std::string trace;
    std::vector<uint64_t> cache;
    std::vector<double> mult;
    std::string policy = "default";
    std::string synthetic;
    uint32_t experts = 0;
    bool belady = true;
    bool json_output = false;
};

void run_simulate(const SimulateArgs& args) {
    json options;
    if (!args.cache.empty()) options["slots"] = args.cache;
    if (!args.mult.empty()) options["multiple"] = args.mult;
    options["policy"] = args.policy;
    options["belady"] = args.belady;
    if (args.experts) options["experts"] = args.experts;
    if (!args.synthetic.empty()) {
        const json spec = json::parse(args.synthetic, nullptr, false);
        if (spec.is_discarded() || !spec.is_object())
            throw CLI::ValidationError("--synthetic", "expects a JSON object, e.g. '{}' or '{\"seed\": 2}'");
        options["synthetic"] = spec;
    }
    if (args.trace.empty() == args.synthetic.empty())
        throw CLI::ValidationError("TRACE", "give a trace file or --synthetic, not both or neither");
    char* text = nullptr;
    waste_error error{};
    if (waste_simulate_trace_json(args.trace.empty() ? nullptr : args.trace.c_str(), options.dump().c_str(), &text, &error) != WASTE_OK)
        fail_with(error, "simulate");
    const std::string result_text = take_string(text);
    if (args.json_output) {
        fmt::print("{}\n", result_text);
        return;
    }
    const json result = json::parse(result_text);
    fmt::print("trace    {}: {} tokens, {} MoE layers, top-{} of {} experts\n", result["trace"].get<std::string>(),
               result["tokens"].get<uint64_t>(), result["layers"].get<uint64_t>(), result["top_k"].get<uint64_t>(),
               result["experts"].get<uint64_t>());
    fmt::print("lookups  {}; working set {} records a token; {} distinct records\n\n", result["accesses"].get<uint64_t>(),
               result["working_set"].get<uint64_t>(), result["distinct_records"].get<uint64_t>());
    const json& runs = result["runs"];
    fmt::print("{:>8} {:>7}", "slots", "x ws");
    for (const json& p : runs[0]["policies"]) fmt::print(" {:>8}", p["policy"].get<std::string>());
    if (runs[0].contains("belady")) fmt::print(" {:>8}", "belady");
    fmt::print("   (hit rate)\n");
    for (const json& run : runs) {
        fmt::print("{:>8} {:>7.2f}", run["slots"].get<uint64_t>(), run["multiple"].get<double>());
        for (const json& p : run["policies"]) fmt::print(" {:>7.1f}%", 100 * p["hit_rate"].get<double>());
        if (run.contains("belady")) fmt::print(" {:>7.1f}%", 100 * run["belady"]["hit_rate"].get<double>());
        fmt::print("\n");
    }
}

}  // namespace

void add_simulate_command(CLI::App& app) {
    auto args = std::make_shared<SimulateArgs>();
    CLI::App* simulate = app.add_subcommand(
        "simulate", "Replay a routing trace through the expert cache: hit rate per policy beside Belady's optimum");
    simulate->add_option("TRACE", args->trace, "Routing trace, JSON lines: {\"layers\": [[ids of MoE layer 0], ...]} per token");
    auto* cache = simulate->add_option("--cache", args->cache, "Cache size(s) in records, e.g. 208 or 208,416")->delimiter(',')
                      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 26))->default_str("none (give --cache or --mult)");
    auto* mult = simulate->add_option("--mult", args->mult, "Cache size(s) as multiples of one token's working set, e.g. 1,2,4,8")
                     ->delimiter(',')->check(CLI::PositiveNumber)->default_str("none");
    cache->excludes(mult);
    mult->excludes(cache);
    simulate->add_option("--policy", args->policy, "reuse (ours, the default), lru, lfru, or all")->default_val("default");
    simulate->add_flag("!--no-belady", args->belady, "Skip Belady's optimum");
    simulate->add_option("--experts", args->experts, "Refuse ids at or above this (default: any below 2^20)")->check(CLI::Range(1u, 1u << 20))->default_str("any below 2^20");
    simulate->add_option("--synthetic", args->synthetic,
                         "Replay a seeded Zipf-with-drift trace instead of a file: a JSON object of options, '{}' for the defaults")
        ->default_str("none");
    simulate->add_flag("--json", args->json_output, "Print JSON (documented in include/waste/waste.h)");
    simulate->callback([args] {
        if (args->cache.empty() && args->mult.empty()) throw CLI::RequiredError("--cache or --mult");
        run_simulate(*args);
    });
}

}  // namespace waste_cli
