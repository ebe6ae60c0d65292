// stream_options.cpp — see stream_options.h.
#include "stream_options.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_common.h"

namespace waste_cli {

void add_stream_options(CLI::App* command, StreamArgs& args) {
    command->add_option("--io", args.io, "Expert reads: auto (io_uring, else pread), io_uring, pread, sync")
        ->default_val("auto")
        ->check(CLI::IsMember(std::vector<std::string>{"auto", "io_uring", "uring", "pread", "sync"}));
    command->add_option("--lookahead", args.lookahead, "Experts prefetched per MoE layer by router lookahead, per token (a prompt chunk: its tokens' union; 0 = off)")
        ->default_val(6)
        ->check(CLI::Range(0, 1 << 16));
    command->add_option("--lookahead-layers", args.lookahead_layers,
                        "MoE layers ahead a decode step's router lookahead predicts, each its --lookahead experts")
        ->default_val(1)
        ->check(CLI::Range(1, 4));
    command->add_flag("--mlock", args.mlock, "Wire the trunk in RAM (a warning if RLIMIT_MEMLOCK refuses)");
    command->add_flag("--learn", args.learn, "At the end, add this run's expert usage to the hotlist (--usage), which warms the cache at the next open");
    command->add_option("--usage", args.usage, "The hotlist file")->default_str("usage.waste in the container directory");
    command->add_flag("--no-hotlist", args.no_hotlist, "Do not warm the expert cache from the hotlist at open");
    command->add_option("--dump-route", args.dump_route, "Write each token's routing as JSON lines (waste simulate reads it)")->default_str("none");
    command->add_option("--lut", args.lut,
                        "Arithmetic: int8 (the default: int8 lookup tables in decode, int8 rows and activations in "
                        "prefill, experts held decoded where the budget has room, int8 inputs to the trunk's Q8G/Q4G "
                        "projections and LM head; what it costs over exact: docs/QUALITY.md) or exact (f32 throughout)")
        ->default_val("int8")
        ->check(CLI::IsMember(std::vector<std::string>{"exact", "int8"}));
    add_prefill_chunk_option(command, args.prefill_chunk);
}

void add_prefill_chunk_option(CLI::App* command, uint32_t& tokens) {
    command->add_option("--chunk,--prefill-chunk", tokens,
                        "Prefill chunk: prompt tokens evaluated together (1 = token by token; each expert and the trunk "
                        "read once per chunk; its activations are in the plan)")
        ->default_str("the plan's (512, halved down to 64 where RAM is short)")
        ->check(CLI::Range(1, 8192));
}

waste_open_options model_open_options(uint32_t context, unsigned threads, const std::string& budget, bool verify,
                                      const std::string& policy, const StreamArgs& stream) {
    waste_open_options options;
    waste_open_options_init(&options);
    options.context_length = context;
    options.threads = threads;
    options.budget_bytes = budget.empty() ? 0 : parse_size(budget);
    if (verify) options.flags |= WASTE_OPEN_VERIFY_CHECKSUMS;
    waste_error error{};
    if (waste_cache_policy_parse(policy.c_str(), &options.cache_policy, &error) != WASTE_OK)
        throw CLI::ValidationError("--policy", error.message);
    apply_open_options(stream, options);
    return options;
}

void apply_open_options(const StreamArgs& args, waste_open_options& options) {
    if (args.io == "io_uring" || args.io == "uring") options.io_backend = WASTE_IO_URING;
    else if (args.io == "pread") options.io_backend = WASTE_IO_PREAD;
    else if (args.io == "sync") options.io_backend = WASTE_IO_SYNC;
    else options.io_backend = WASTE_IO_DEFAULT;
    if (args.mlock) options.flags |= WASTE_OPEN_MLOCK_TRUNK;
    if (args.no_hotlist) options.flags |= WASTE_OPEN_NO_HOTLIST;
    options.usage_path = args.usage.empty() ? nullptr : args.usage.c_str();
    options.lut_mode = args.lut == "int8" ? WASTE_LUT_INT8 : WASTE_LUT_EXACT;
    options.prefill_chunk = args.prefill_chunk;
}

std::string budget_reason(const std::string& covers, uint64_t spare_bytes, uint64_t everything_bytes) {
    if (covers == "requested") return "--budget";
    if (covers == "everything") return "every expert cached: it fits in what this machine spares";
    const std::string spare = fmt::format("this machine spares {} (7/8 of its available RAM)", format_bytes(spare_bytes));
    if (covers == "spare") return fmt::format("{}; every expert cached needs {}", spare, format_bytes(everything_bytes));
    return fmt::format("the floor: {}, less than it", spare);
}

void report_open(const StreamArgs& args, waste_model* model, bool quiet) {
    if (quiet && !args.mlock) return;
    char* text = nullptr;
    waste_error error{};
    if (waste_model_info_json(model, &text, &error) != WASTE_OK) fail_with(error, "info");
    const auto info = nlohmann::json::parse(take_string(text));
    if (!quiet)
        fmt::print(stderr, "budget {}, expert cache {} ({})\n", format_bytes(info.value("budget_bytes", uint64_t{0})),
                   format_bytes(info.value("expert_cache_bytes", uint64_t{0})),
                   budget_reason(info.value("budget_covers", std::string("requested")), info.value("spare_bytes", uint64_t{0}),
                                 info.value("everything_bytes", uint64_t{0})));
    if (args.mlock && !info.value("trunk_locked", false))
        fmt::print(stderr, "warning: --mlock: {}\n", info.value("trunk_mlock", std::string("refused")));
}

void apply_session_options(const StreamArgs& args, waste_session* session) {
    waste_error error{};
    if (waste_session_set_lookahead(session, args.lookahead, &error) != WASTE_OK) fail_with(error, "--lookahead");
    if (waste_session_set_lookahead_layers(session, args.lookahead_layers, &error) != WASTE_OK)
        fail_with(error, "--lookahead-layers");
    if (!args.dump_route.empty() && waste_session_set_route_dump(session, args.dump_route.c_str(), &error) != WASTE_OK)
        fail_with(error, "--dump-route");
}

void finish_stream(const StreamArgs& args, waste_model* model, waste_session* session) {
    waste_error error{};
    if (!args.dump_route.empty() && waste_session_set_route_dump(session, nullptr, &error) != WASTE_OK)
        fail_with(error, "--dump-route");
    if (args.learn && waste_model_save_usage(model, &error) != WASTE_OK) fail_with(error, "--learn");
}

}  // namespace waste_cli
