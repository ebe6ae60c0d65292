// cmd_model.cpp — `waste info`, `waste plan`, `waste verify`.
#include <cstdio>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_common.h"
#include "server_plan.h"
#include "stream_options.h"

namespace waste_cli {
namespace {

using nlohmann::json;

void print_info(const json& info) {
    fmt::print("architecture      {} ({})\n", info["arch"].get<std::string>(), info["model_type"].get<std::string>());
    const int gqa = info.value("gqa_layers", 0), gdn = info.value("gdn_layers", 0);
    if (gdn > 0)  // Qwen3.5: Gated DeltaNet and gated GQA
        fmt::print("layers            {} ({} dense, {} MoE; {} Gated DeltaNet: {} key / {} value heads of {}; {} GQA: {} "
                   "query / {} key-value heads of {})\n",
                   info["layers"].get<int>(), info["dense_layers"].get<int>(), info["moe_layers"].get<int>(), gdn,
                   info["gdn_key_heads"].get<int>(), info["gdn_value_heads"].get<int>(), info["gdn_head_dim"].get<int>(),
                   gqa, info["heads"].get<int>(), info["kv_heads"].get<int>(), info["head_dim"].get<int>());
    else if (gqa > 0)  // Qwen3: one attention kind
        fmt::print("layers            {} ({} dense, {} MoE; {} GQA: {} query / {} key-value heads of {})\n",
                   info["layers"].get<int>(), info["dense_layers"].get<int>(), info["moe_layers"].get<int>(), gqa,
                   info["heads"].get<int>(), info["kv_heads"].get<int>(), info["head_dim"].get<int>());
    else
        fmt::print("layers            {} ({} dense, {} MoE; {} KDA, {} MLA)\n", info["layers"].get<int>(),
                   info["dense_layers"].get<int>(), info["moe_layers"].get<int>(), info["kda_layers"].get<int>(),
                   info["mla_layers"].get<int>());
    fmt::print("experts           {} per MoE layer, top-{}, {} shared\n", info["experts"].get<int>(),
               info["top_k"].get<int>(), info["shared_experts"].get<int>());
    fmt::print("hidden / vocab    {} / {}\n", info["hidden"].get<int>(), info["vocab"].get<int>());
    if (info.contains("eos_ids") && !info["eos_ids"].empty()) {
        std::string ids;
        for (const auto& id : info["eos_ids"]) ids += (ids.empty() ? "" : ", ") + std::to_string(id.get<int64_t>());
        fmt::print("end of text       {}\n", ids);
    }
    fmt::print("parameters        {} total, {} active per token, {} trunk\n", info["params_total"].get<uint64_t>(),
               info["params_active"].get<uint64_t>(), info["params_trunk"].get<uint64_t>());
    fmt::print("quantisation      {}\n", info["quantization"].get<std::string>());
    fmt::print("expert record     {} bytes\n", info["expert_record_bytes"].get<uint64_t>());
    fmt::print("resident trunk    {}\n", format_bytes(info["trunk_resident_bytes"].get<uint64_t>()));
    fmt::print("container         {}\n", format_bytes(info["container_bytes"].get<uint64_t>()));
    fmt::print("expert reads      {}\n", info["io_mode"].get<std::string>());
}

void print_plan(const json& plan) {
    auto line = [&](const char* label, const char* key) {
        fmt::print("{:<22}{}\n", label, format_bytes(plan[key].get<uint64_t>()));
    };
    fmt::print("{:<22}{} tokens\n", "context", plan["ctx"].get<uint64_t>());
    line("trunk", "trunk_bytes");
    const uint64_t sessions = plan["sessions"].get<uint64_t>();
    if (sessions == 1) {
        line("session state", "state_bytes");
    } else {
        fmt::print("{:<22}{} ({} sessions x {})\n", "session state", format_bytes(plan["state_bytes"].get<uint64_t>()), sessions,
                   format_bytes(plan["session_state_bytes"].get<uint64_t>()));
    }
    fmt::print("{:<22}{} ({} compute threads, prefill chunk of {} tokens{})\n", "scratch",
               format_bytes(plan["scratch_bytes"].get<uint64_t>()), plan["compute_threads"].get<unsigned>(),
               plan["prefill_chunk"].get<unsigned>(),
               sessions == 1 ? "" : fmt::format("; {} per session", format_bytes(plan["session_scratch_bytes"].get<uint64_t>())));
    line("expert reads", "io_bytes");
    line("codebooks, process", "runtime_bytes");
    if (plan["snapshot_bytes"].get<uint64_t>() > 0) line("snapshot reserve", "snapshot_bytes");
    if (plan["grammars"].get<uint64_t>() > 0)
        fmt::print("{:<22}{} ({} grammar slot{} and the vocabulary's trie)\n", "grammar reserve",
                   format_bytes(plan["grammar_bytes"].get<uint64_t>()), plan["grammars"].get<uint64_t>(),
                   plan["grammars"].get<uint64_t>() == 1 ? "" : "s");
    if (plan.value("vision_bytes", uint64_t{0}) > 0) line("vision", "vision_bytes");
    line("minimum expert cache", "min_expert_cache");
    line("floor", "floor_bytes");
    line("one token's experts", "working_set_bytes");
    line("every expert cached", "everything_bytes");
    line("physical RAM", "physical_ram_bytes");
    line("usable RAM", "usable_ram_bytes");
    if (plan["available_ram_bytes"].get<uint64_t>() > 0) line("available RAM", "available_ram_bytes");
    line("spare (7/8)", "spare_bytes");
    fmt::print("{:<22}{} ({})\n", "recommended budget", format_bytes(plan["recommended_bytes"].get<uint64_t>()),
               budget_reason(plan["recommended_covers"].get<std::string>(), plan["spare_bytes"].get<uint64_t>(),
                             plan["everything_bytes"].get<uint64_t>()));
    fmt::print("{:<22}{} ({})\n", "budget", format_bytes(plan["budget_bytes"].get<uint64_t>()),
               plan["budget_source"].get<std::string>());
    if (plan["budget_ok"].get<bool>()) {
        fmt::print("{:<22}{} ({} records)\n", "expert cache", format_bytes(plan["expert_cache_bytes"].get<uint64_t>()),
                   plan["expert_cache_records"].get<uint64_t>());
        if (plan["all_decoded_experts_bytes"].get<uint64_t>() > 0)
            fmt::print("{:<22}{} of {} (int8 rows for prefill: what the budget leaves after every record)\n",
                       "decoded experts", format_bytes(plan["decoded_experts_bytes"].get<uint64_t>()),
                       format_bytes(plan["all_decoded_experts_bytes"].get<uint64_t>()));
    } else {
        fmt::print("{:<22}below the floor: this budget is refused\n", "");
    }
}

struct ModelArgs {
    std::string model;
    bool json_output = false;
    std::string budget;
    uint32_t context = 4096;
    unsigned threads = 0;
    uint32_t sessions = 1;
    std::string snapshot_reserve;
    uint32_t grammars = 0;
    bool vision = false;
    std::string lut = "int8";
    uint32_t prefill_chunk = 0;
    // `waste plan --parallel N --queue M`: what `waste serve` plans with
    // the same flags (its sessions, grammar slots, prompt cache and
    // request memory).
    uint32_t parallel = 0;
    uint32_t queue = 64;
    std::string max_body;
    std::string request_memory;
    std::string prompt_cache = "64M";
};

}  // namespace

void add_model_commands(CLI::App& app) {
    auto info_args = std::make_shared<ModelArgs>();
    CLI::App* info = app.add_subcommand("info", "Describe a container: architecture, parameters, quantisation, sizes");
    info->add_option("MODEL", info_args->model, "Container directory")->required();
    info->add_flag("--json", info_args->json_output, "Print JSON (documented in docs/CLI.md)");
    info->callback([info_args] {
        waste_open_options options;
        waste_open_options_init(&options);
        options.flags = WASTE_OPEN_METADATA_ONLY;
        ModelHandle model = open_model(info_args->model, options);
        char* text = nullptr;
        waste_error error{};
        if (waste_model_info_json(model.get(), &text, &error) != WASTE_OK) fail_with(error, "info");
        const std::string json_text = take_string(text);
        if (info_args->json_output) fmt::print("{}\n", json_text);
        else print_info(json::parse(json_text));
    });

    auto plan_args = std::make_shared<ModelArgs>();
    CLI::App* plan = app.add_subcommand("plan", "Show the memory plan: floor, recommended budget, expert cache");
    plan->add_option("MODEL", plan_args->model, "Container directory")->required();
    plan->add_option("--ctx", plan_args->context, "Context length in tokens")->default_val(4096)->check(CLI::Range(1, 1 << 24));
    plan->add_option("--budget", plan_args->budget, "RAM budget (e.g. 8G)")->default_str("the recommended budget");
    add_threads_option(plan, plan_args->threads);
    plan->add_option("--sessions", plan_args->sessions,
                     "Sessions planned at once, each with its state and workspace (a server's --parallel)")
        ->default_val(1)
        ->check(CLI::Range(1, 1024));
    plan->add_option("--snapshot-reserve", plan_args->snapshot_reserve,
                     "RAM reserved for session snapshots, prompt reuse (e.g. 256M)")
        ->default_str("0: none");
    plan->add_option("--grammars", plan_args->grammars,
                     "Grammar slots planned for constrained output, each a compiled grammar and one generation "
                     "(run/chat with --grammar or --json-*: 1; serve: 2 x --parallel)")
        ->default_val(0)
        ->check(CLI::Range(0, 4096));
    plan->add_flag("--vision", plan_args->vision,
                   "Plan the vision tower too: its tensors, one image's decode or tower pass, each session's image queue "
                   "(what --image needs)");
    plan->add_option("--lut", plan_args->lut,
                     "Plan the arithmetic: int8 (the default; its tables and scratch, and the experts it holds decoded) "
                     "or exact")
        ->default_val("int8")
        ->check(CLI::IsMember(std::vector<std::string>{"exact", "int8"}));
    add_prefill_chunk_option(plan, plan_args->prefill_chunk);
    CLI::Option* parallel = plan->add_option("--parallel", plan_args->parallel,
                                             "Plan `waste serve --parallel N`: N sessions, 2N grammar slots, its prompt cache "
                                             "and request memory")
                                ->default_str("none: no server")
                                ->check(CLI::Range(1, 256))
                                ->excludes("--sessions");
    plan->add_option("--queue", plan_args->queue, "With --parallel: serve's --queue")->default_val(64)->check(CLI::Range(0, 4096))->needs(parallel);
    plan->add_option("--max-body", plan_args->max_body, "With --parallel: serve's --max-body")->default_str("16M")->needs(parallel);
    plan->add_option("--request-memory", plan_args->request_memory, "With --parallel: serve's --request-memory")
        ->default_str("serve's default")
        ->needs(parallel);
    plan->add_option("--prompt-cache", plan_args->prompt_cache, "With --parallel: serve's --prompt-cache")->default_val("64M")->needs(parallel);
    plan->add_flag("--json", plan_args->json_output, "Print JSON (documented in docs/CLI.md)");
    plan->callback([plan_args, plan] {
        const bool server = plan_args->parallel > 0;
        if (server) {
            plan_args->sessions = plan_args->parallel;
            if (plan->count("--grammars") == 0) plan_args->grammars = 2 * plan_args->parallel;
            if (plan->count("--snapshot-reserve") == 0) plan_args->snapshot_reserve = plan_args->prompt_cache;
        }
        waste_open_options options;
        waste_open_options_init(&options);
        options.flags = WASTE_OPEN_METADATA_ONLY;
        options.threads = plan_args->threads;  // each compute thread has its own tables in the scratch
        options.sessions = plan_args->sessions;
        options.snapshot_bytes = plan_args->snapshot_reserve.empty() ? 0 : parse_size(plan_args->snapshot_reserve);
        options.grammars = plan_args->grammars;
        options.vision = plan_args->vision ? 1 : 0;
        options.lut_mode = plan_args->lut == "int8" ? WASTE_LUT_INT8 : WASTE_LUT_EXACT;
        options.prefill_chunk = plan_args->prefill_chunk;
        ModelHandle model = open_model(plan_args->model, options);
        waste_plan_options plan_options{plan_args->context, plan_args->budget.empty() ? 0 : parse_size(plan_args->budget)};
        char* text = nullptr;
        waste_error error{};
        if (waste_model_plan_json(model.get(), &plan_options, &text, &error) != WASTE_OK) fail_with(error, "plan");
        const std::string json_text = take_string(text);
        json result = json::parse(json_text);
        const ServerPlan server_plan =
            server_plan_of(plan_args->parallel, plan_args->queue, plan_args->max_body, plan_args->request_memory);
        if (server) result["server"] = server_plan_json(server_plan, result["budget_bytes"].get<uint64_t>());
        if (plan_args->json_output) {
            fmt::print("{}\n", server ? result.dump() : json_text);
            return;
        }
        print_plan(result);
        if (server) fmt::print("{}", server_plan_text(server_plan, result["budget_bytes"].get<uint64_t>(), "", 22));
    });

    auto verify_args = std::make_shared<ModelArgs>();
    auto verify_source = std::make_shared<std::string>();
    auto verify_max_error = std::make_shared<double>(0.0);
    CLI::App* verify = app.add_subcommand("verify", "Check the CRC-32 of every expert record (and, with --source, "
                                                    "the weights against the checkpoint they came from)");
    verify->add_option("MODEL", verify_args->model, "Container directory")->required();
    verify->add_option("--source", *verify_source, "The checkpoint it was converted from: compare every expert and "
                                                   "trunk tensor with it")->default_str("none: CRC-32 only");
    verify->add_option("--max-error", *verify_max_error, "With --source: the relative expert error a layer may have")
        ->default_str("0.35 at >= 3 bits/weight, 0.5 below");
    verify->add_flag("--json", verify_args->json_output, "With --source: print the report as JSON");
    verify->callback([verify_args, verify_source, verify_max_error] {
        if (!verify_source->empty()) {
            verify_against_source(verify_args->model, *verify_source, *verify_max_error, verify_args->json_output);
            return;
        }
        waste_open_options options;
        waste_open_options_init(&options);
        options.flags = WASTE_OPEN_METADATA_ONLY | WASTE_OPEN_VERIFY_CHECKSUMS;
        ModelHandle model = open_model(verify_args->model, options);
        waste_error error{};
        if (waste_model_verify(model.get(), nullptr, nullptr, &error) != WASTE_OK) fail_with(error, "verify");
        fmt::print("{}: every expert record passed its checks and CRC-32\n", verify_args->model);
    });
}

}  // namespace waste_cli
