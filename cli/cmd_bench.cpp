// cmd_bench.cpp — `waste bench`: decode and prefill speed on a model, where
// each token's time goes, the bytes it touches, and the machine's measured
// memory bandwidth beside them. Machine-readable with --json. Speed is
// reported as the median of several runs, each run in this same process.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <random>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench_parallel.h"
#include "cli_common.h"
#include "input_file.h"
#include "stream_options.h"

namespace waste_cli {
namespace {

using nlohmann::json;

struct BenchArgs {
    std::string model;
    std::string budget;
    std::string policy = "default";
    unsigned threads = 0;
    int tokens = 64;
    int skip = 0;  // decode tokens of each run left out of its figures (the cache filling)
    int prompt = 64;
    int runs = 3;
    // Untimed runs first (a whole prompt and one decode token), as llama-bench's
    // warm-up: 1, or 0 with --no-warm (a cold measurement stays cold).
    std::optional<int> warmup;
    std::string prompt_ids;  // a file of the prompt's ids ("" = random ids from --seed)
    uint32_t seed = 1;
    double temperature = 0;  // decode: 0 = argmax; else sampled (seeded by --seed, the same tokens every run)
    bool warm = true;
    bool json_output = false;
    int parallel = 1;  // > 1: streams decoding together (bench_parallel.h)
    StreamArgs stream;
};

// The session's profile so far: seconds per category (cumulative while on).
json profile_seconds(const waste_session* session) {
    char* text = nullptr;
    waste_error error{};
    if (waste_session_profile_json(session, &text, &error) != WASTE_OK) fail_with(error, "profile");
    return json::parse(take_string(text))["seconds"];
}

// total[name] += after[name] - before[name]
void add_difference(json& total, const json& before, const json& after) {
    for (auto& [name, seconds] : after.items())
        total[name] = total.value(name, 0.0) + seconds.get<double>() - before.value(name, 0.0);
}

// ms per token of each category, and their sum
json per_token_ms(const json& seconds, double tokens, double* total_ms) {
    json out = json::object();
    *total_ms = 0;
    for (auto& [name, s] : seconds.items()) {
        out[name] = tokens > 0 ? s.get<double>() * 1e3 / tokens : 0;
        *total_ms += out[name].get<double>();
    }
    return out;
}

json call_json(waste_status (*fn)(const waste_model*, char**, waste_error*), const waste_model* model, const char* what) {
    char* text = nullptr;
    waste_error error{};
    if (fn(model, &text, &error) != WASTE_OK) fail_with(error, what);
    return json::parse(take_string(text));
}

// The bandwidth probe's buffer: what the budget holds before the model is
// open (the budget less the plan's runtime bytes, which cover the process
// itself), at most the library's default; 0 when the budget is below the
// floor (the open that follows refuses it with the numbers) or holds less
// than the library's 1 MiB minimum (then no bandwidth is reported).
//
// Incident (issue 18): the probe's fixed 512 MiB buffer used to be filled
// while the model was open, outside the plan: `bench --budget 232M` on a
// `mid` container peaked at 529 MB resident and a 300 MB memory cgroup
// OOM-killed it. It now runs before the open, within the budget, and is
// freed before the open (tests/budget_cgroup_test.cpp runs it in a cgroup).
uint64_t bandwidth_buffer_bytes(const std::string& path, const waste_open_options& options) {
    waste_open_options metadata = options;
    metadata.flags |= WASTE_OPEN_METADATA_ONLY;
    ModelHandle model = open_model(path, metadata);
    waste_plan_options plan_options{options.context_length, options.budget_bytes};
    char* text = nullptr;
    waste_error error{};
    if (waste_model_plan_json(model.get(), &plan_options, &text, &error) != WASTE_OK) fail_with(error, "plan");
    const json plan = json::parse(take_string(text));
    if (!plan["budget_ok"].get<bool>()) return 0;
    constexpr uint64_t largest = uint64_t{512} << 20;  // the library's default: far beyond any cache
    const uint64_t bytes = std::min(largest, plan["budget_bytes"].get<uint64_t>() - plan["runtime_bytes"].get<uint64_t>());
    return bytes >= (uint64_t{1} << 20) ? bytes : 0;
}

void run_bench(const BenchArgs& args) {
    if (args.parallel > 1) {
        run_parallel_bench(ParallelBench{args.model, args.budget, args.policy, args.threads, args.parallel, args.prompt, args.tokens,
                                         args.runs, args.seed, args.warm, args.json_output, args.stream});
        return;
    }
    waste_error error{};
    const waste_open_options options = model_open_options(static_cast<uint32_t>(args.prompt + args.tokens + 1),
                                                          args.threads, args.budget, /*verify=*/false, args.policy,
                                                          args.stream);
    const uint64_t probe_bytes = bandwidth_buffer_bytes(args.model, options);
    double bandwidth = 0;
    if (probe_bytes && waste_measure_memory_bandwidth(args.threads, probe_bytes, &bandwidth, &error) != WASTE_OK)
        fail_with(error, "memory bandwidth");
    // the f32 multiply-add ceiling, beside the bandwidth one, before the model opens
    double fma_peak = 0;
    if (waste_measure_compute_peak(args.threads, &fma_peak, &error) != WASTE_OK) fail_with(error, "compute peak");
    ModelHandle model = open_model(args.model, options);
    report_open(args.stream, model.get(), args.json_output);
    const json info = call_json(waste_model_info_json, model.get(), "info");
    const json traffic = call_json(waste_model_token_traffic_json, model.get(), "traffic");
    uint64_t warmed = 0;
    if (args.warm && waste_model_warm_cache(model.get(), &warmed, &error) != WASTE_OK) fail_with(error, "warming the cache");

    waste_session* raw = nullptr;
    if (waste_session_create(model.get(), &raw, &error) != WASTE_OK) fail_with(error, "session");
    std::unique_ptr<waste_session, void (*)(waste_session*)> session(raw, waste_session_free);
    apply_session_options(args.stream, session.get());
    const uint32_t chunk = info["prefill_chunk"].get<uint32_t>();  // --chunk, or the plan's

    const int vocab = info["vocab"].get<int>();
    std::vector<int32_t> prompt(static_cast<size_t>(args.prompt));
    if (!args.prompt_ids.empty()) {
        // The same prompt as another engine's run (scripts/compare_llama.py): its first --prompt ids.
        std::vector<int32_t> ids;
        try {
            ids = parse_token_ids(read_input_file(args.prompt_ids, 64 << 20, "the prompt ids file"), true, args.prompt_ids);
        } catch (const CLI::ValidationError& bad) {
            throw RuntimeFailure{bad.what()};  // the file's content, not the command line: exit 1
        }
        if (ids.size() < prompt.size())
            throw RuntimeFailure{fmt::format("{} holds {} ids; --prompt {} wants that many", args.prompt_ids, ids.size(), args.prompt)};
        std::copy_n(ids.begin(), prompt.size(), prompt.begin());
    } else {
        std::mt19937 random(args.seed);
        for (int32_t& id : prompt) id = static_cast<int32_t>(random() % static_cast<uint32_t>(vocab));
    }

    std::vector<double> prefill_rates, decode_rates;
    const int measured = args.tokens - args.skip;  // decode tokens each run reports
    waste_session_stats before{}, after{}, prefill_before{}, prefill_after{};
    uint64_t prefill_records = 0;  // expert records the prefills used (each distinct one once per chunk)
    json prefill_seconds_by = json::object(), decode_seconds_by = json::object(), mark;
    std::vector<int32_t> generated;  // the last run's decode tokens
    // Runs below 0 are the warm-up: timed by nothing, counted in no figure.
    const int warmup_runs = args.warmup.value_or(args.warm ? 1 : 0);
    for (int run = -warmup_runs; run < args.runs; ++run) {
        const bool timed = run >= 0;
        if (waste_session_reset(session.get(), &error) != WASTE_OK) fail_with(error, "reset");
        // profiled throughout; each phase's figures are differences of the
        // cumulative profile
        waste_session_set_profiling(session.get(), 1, &error);
        mark = profile_seconds(session.get());
        waste_session_stats_get(session.get(), &prefill_before, &error);
        auto start = std::chrono::steady_clock::now();
        if (!prompt.empty() && waste_session_eval(session.get(), prompt.data(), prompt.size(), &error) != WASTE_OK)
            fail_with(error, "prefill");
        const double prefill_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        waste_session_stats_get(session.get(), &prefill_after, &error);
        if (timed) {
            if (!prompt.empty()) prefill_rates.push_back(prompt.size() / prefill_seconds);
            prefill_records += (prefill_after.expert_hits + prefill_after.expert_misses) -
                               (prefill_before.expert_hits + prefill_before.expert_misses);
            add_difference(prefill_seconds_by, mark, profile_seconds(session.get()));
        }
        // decode: feed the argmax back, one token per step, profiled from
        // token `skip` on (the steady state, once the cache has filled)
        int32_t next = prompt.empty() ? 0 : -1;
        waste_sampler_options sampling;
        waste_sampler_options_init(&sampling);
        sampling.temperature = args.temperature;
        sampling.seed = args.seed;
        waste_sampler* raw_sampler = nullptr;
        if (waste_sampler_create(&sampling, &raw_sampler, &error) != WASTE_OK) fail_with(error, "sampler");
        std::unique_ptr<waste_sampler, void (*)(waste_sampler*)> sampler(raw_sampler, waste_sampler_free);
        const int tokens = timed ? args.tokens : std::min(args.tokens, 1);
        generated.clear();
        for (int i = 0; i < tokens; ++i) {
            if (i == args.skip) {
                mark = profile_seconds(session.get());
                waste_session_stats_get(session.get(), &before, &error);
                start = std::chrono::steady_clock::now();
            }
            if (next < 0) {
                const float* logits = nullptr;
                size_t n = 0;
                if (waste_session_logits(session.get(), &logits, &n, &error) != WASTE_OK) fail_with(error, "logits");
                if (waste_sampler_sample(sampler.get(), logits, n, &next, nullptr, &error) != WASTE_OK) fail_with(error, "sampling");
            }
            if (waste_session_eval(session.get(), &next, 1, &error) != WASTE_OK) fail_with(error, "decode");
            generated.push_back(next);
            next = -1;
        }
        const double decode_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (timed && measured > 0) decode_rates.push_back(measured / decode_seconds);
        waste_session_stats_get(session.get(), &after, &error);
        if (timed && measured > 0) add_difference(decode_seconds_by, mark, profile_seconds(session.get()));
        waste_session_set_profiling(session.get(), 0, &error);
    }
    const double decoded = static_cast<double>(measured) * args.runs;
    const double prefilled = static_cast<double>(args.prompt) * args.runs;
    double profiled_total = 0, prefill_profiled = 0;
    const json breakdown = per_token_ms(decode_seconds_by, decoded, &profiled_total);
    const json prefill_breakdown = per_token_ms(prefill_seconds_by, prefilled, &prefill_profiled);
    finish_stream(args.stream, model.get(), session.get());
    const uint64_t hits = after.expert_hits - before.expert_hits, misses = after.expert_misses - before.expert_misses;
    const double bytes_per_token = traffic["total_bytes"].get<double>();
    json out;
    out["model"] = args.model;
    out["arch"] = info["arch"];
    out["threads"] = args.threads;
    out["cached_records"] = warmed;
    out["cache_policy"] = waste_cache_policy_name(options.cache_policy);
    // What a prefill token touches: the trunk once per chunk (its matrices
    // multiply the chunk's tokens together) and each distinct expert record
    // of a chunk once, as counted by the session; the expert matrices are
    // dequantised in registers (kernels/vq_matmul.h), so no table lookups.
    const double moe_slots = info["moe_layers"].get<double>() * info["top_k"].get<double>();
    const double record_payload = moe_slots > 0 ? traffic["expert_bytes"].get<double>() / moe_slots : 0;
    const double chunks_per_run = args.prompt > 0 ? std::ceil(static_cast<double>(args.prompt) / chunk) : 0;
    const double prefill_trunk = prefilled > 0 ? traffic["trunk_bytes"].get<double>() * chunks_per_run * args.runs / prefilled : 0;
    const double prefill_experts = prefilled > 0 ? prefill_records * record_payload / prefilled : 0;
    out["warmup_runs"] = warmup_runs;
    out["prompt_ids"] = args.prompt_ids.empty() ? fmt::format("random, seed {}", args.seed) : args.prompt_ids;
    out["prefill"] = {{"tokens", args.prompt},
                      {"chunk", chunk},
                      {"tok_per_s", prefill_rates},
                      {"median_tok_per_s", median(prefill_rates)},
                      {"ms_per_token", prefill_breakdown},
                      {"profiled_ms_per_token", prefill_profiled},
                      {"traffic_per_token",
                       {{"trunk_bytes", prefill_trunk},
                        {"expert_bytes", prefill_experts},
                        {"expert_records", prefilled > 0 ? prefill_records / prefilled : 0},
                        {"lookups", 0},
                        {"total_bytes", prefill_trunk + prefill_experts}}}};
    out["generated_ids"] = generated;
    out["decode"] = {{"tokens", args.tokens},
                     {"skipped_tokens", args.skip},
                     {"tok_per_s", decode_rates},
                     {"median_tok_per_s", median(decode_rates)}};
    out["ms_per_token"] = breakdown;
    out["profiled_ms_per_token"] = profiled_total;
    out["traffic_per_token"] = traffic;
    out["memory_bandwidth_gb_per_s"] = bandwidth / 1e9;
    out["memory_bandwidth_buffer_bytes"] = probe_bytes;
    out["bandwidth_bound_tok_per_s"] = bytes_per_token > 0 ? bandwidth / bytes_per_token : 0;
    // the compute side: a token's multiply-adds against the measured f32
    // peak, what the trunk's matvecs achieved (their bytes too), and the
    // lookup rate of the expert matvecs
    const double trunk_macs = traffic["trunk_multiply_adds"].get<double>();
    const double macs = trunk_macs + traffic["table_multiply_adds"].get<double>();
    const double trunk_ms = breakdown.value("trunk_matvec", 0.0) + breakdown.value("lm_head", 0.0);
    const double lut_ms = breakdown.value("lut_apply", 0.0);
    out["compute_peak_multiply_adds_per_s"] = fma_peak;
    out["multiply_adds_per_token"] = macs;
    out["compute_bound_tok_per_s"] = macs > 0 ? fma_peak / macs : 0;
    out["trunk_multiply_adds_per_s"] = trunk_ms > 0 ? trunk_macs / (trunk_ms * 1e-3) : 0;
    out["trunk_bytes_per_s"] = trunk_ms > 0 ? traffic["trunk_bytes"].get<double>() / (trunk_ms * 1e-3) : 0;
    out["lookups_per_ns"] = lut_ms > 0 ? traffic["lookups"].get<double>() / (lut_ms * 1e6) : 0;
    out["expert_hit_rate_last_run"] = hits + misses ? static_cast<double>(hits) / (hits + misses) : 0;
    out["bytes_read_last_run"] = after.bytes_read - before.bytes_read;
    out["io_seconds_last_run"] = after.io_seconds - before.io_seconds;
    // the streaming view of the last run's decode, per token
    const double n = measured > 0 ? measured : 1;
    out["expert_io"] = info.value("expert_io", "");
    out["expert_io_detail"] = info.value("expert_io_detail", "");
    out["io_mode"] = info["io_mode"];
    out["direct_io"] = info["direct_io"];
    out["lookahead"] = args.stream.lookahead;
    out["lookahead_layers"] = args.stream.lookahead_layers;
    // the int8 mode's experts held decoded after the runs (model/decoded_experts.h)
    const json info_after = call_json(waste_model_info_json, model.get(), "info");
    if (info_after.contains("decoded_experts")) out["decoded_experts"] = info_after["decoded_experts"];
    out["streaming_last_run"] = {
        {"bytes_read_per_token", (after.bytes_read - before.bytes_read) / n},
        {"io_wait_ms_per_token", (after.io_seconds - before.io_seconds) * 1e3 / n},
        {"compute_ms_per_token", (after.compute_seconds - before.compute_seconds) * 1e3 / n},
        {"prefetched_per_token", (after.prefetched - before.prefetched) / n},
        {"prefetch_used_per_token", (after.prefetch_used - before.prefetch_used) / n},
        {"prefetch_bytes_per_token", (after.prefetch_bytes - before.prefetch_bytes) / n},
        {"prefetch_late_per_token", (after.prefetch_late - before.prefetch_late) / n},
        {"prefetch_wasted_per_token", (after.prefetch_wasted - before.prefetch_wasted) / n},
        {"misses_per_token", misses / n}};
    // the demand lookups apart: found in the cache on their own, found
    // because lookahead read them ahead, read on demand
    const uint64_t lookahead_hits = after.prefetch_used - before.prefetch_used;
    const double lookups = static_cast<double>(hits + misses);
    out["demand_last_run"] = {{"lookups_per_token", lookups / n},
                              {"cache_hit_rate", lookups > 0 ? (hits - lookahead_hits) / lookups : 0},
                              {"lookahead_hit_rate", lookups > 0 ? lookahead_hits / lookups : 0},
                              {"miss_rate", lookups > 0 ? misses / lookups : 0}};
    if (args.json_output) {
        fmt::print("{}\n", out.dump());
        return;
    }
    fmt::print("model        {} ({}), {} threads, {} expert records cached\n", args.model, info["arch"].get<std::string>(),
               args.threads ? std::to_string(args.threads) : "all", warmed);
    fmt::print("expert reads {}; {}\n", info["io_mode"].get<std::string>(), info.value("expert_io_detail", ""));
    if (out.contains("decoded_experts"))
        fmt::print("int8 rows    {} experts held decoded for prefill, {:.1f} of {:.1f} MB\n",
                   out["decoded_experts"]["held"].get<uint64_t>(), out["decoded_experts"]["held_bytes"].get<double>() / 1e6,
                   out["decoded_experts"]["capacity_bytes"].get<double>() / 1e6);
    const json& st = out["streaming_last_run"];
    const json& demand = out["demand_last_run"];
    fmt::print("streaming    demand lookups {:.1f}% cache hits, {:.1f}% lookahead hits, {:.1f}% read on demand; {:.2f} MB "
               "read/token ({:.2f} speculative), {:.2f} ms/token waiting on reads\n",
               100 * demand["cache_hit_rate"].get<double>(), 100 * demand["lookahead_hit_rate"].get<double>(),
               100 * demand["miss_rate"].get<double>(), st["bytes_read_per_token"].get<double>() / 1e6,
               st["prefetch_bytes_per_token"].get<double>() / 1e6, st["io_wait_ms_per_token"].get<double>());
    fmt::print("lookahead    {} a layer, {} layer(s) ahead: {:.2f} reads issued/token, {:.2f} used ({:.2f} late), {:.2f} evicted unused\n",
               args.stream.lookahead, args.stream.lookahead_layers, st["prefetched_per_token"].get<double>(), st["prefetch_used_per_token"].get<double>(),
               st["prefetch_late_per_token"].get<double>(), st["prefetch_wasted_per_token"].get<double>());
    fmt::print("prefill      {:.2f} tok/s median of {} runs ({} tokens, chunks of {})\n", median(prefill_rates),
               prefill_rates.size(), args.prompt, chunk);
    if (args.prompt > 0) {
        fmt::print("  per token  ");
        for (auto& [name, ms] : prefill_breakdown.items()) fmt::print("{} {:.2f} ms  ", name, ms.get<double>());
        const json& pt = out["prefill"]["traffic_per_token"];
        fmt::print("\n  traffic    {:.1f} MB per token ({:.1f} trunk, {:.1f} experts: {:.2f} records), no table lookups; "
                   "that traffic alone would allow {:.1f} tok/s\n",
                   pt["total_bytes"].get<double>() / 1e6, pt["trunk_bytes"].get<double>() / 1e6,
                   pt["expert_bytes"].get<double>() / 1e6, pt["expert_records"].get<double>(),
                   pt["total_bytes"].get<double>() > 0 ? bandwidth / pt["total_bytes"].get<double>() : 0.0);
    }
    fmt::print("decode       {:.2f} tok/s median of {} runs ({} tokens{})\n", median(decode_rates), decode_rates.size(), args.tokens,
               args.skip ? fmt::format(", the first {} of each run not counted", args.skip) : "");
    fmt::print("per token    ");
    for (auto& [name, ms] : breakdown.items()) fmt::print("{} {:.2f} ms  ", name, ms.get<double>());
    fmt::print("\ntraffic      {:.1f} MB per token ({:.1f} trunk, {:.1f} experts, {:.1f} tables), {:.1f} M lookups\n",
               bytes_per_token / 1e6, traffic["trunk_bytes"].get<double>() / 1e6, traffic["expert_bytes"].get<double>() / 1e6,
               traffic["lut_bytes"].get<double>() / 1e6, traffic["lookups"].get<double>() / 1e6);
    fmt::print("memory       {:.1f} GB/s measured over {} (within the budget, before the model opened); that traffic "
               "alone would allow {:.1f} tok/s\n",
               bandwidth / 1e9, format_bytes(probe_bytes), out["bandwidth_bound_tok_per_s"].get<double>());
    fmt::print("compute      {:.1f} M multiply-adds per token ({:.1f} trunk, {:.1f} table builds); f32 peak {:.1f} G/s measured: "
               "that alone would allow {:.0f} tok/s\n",
               macs / 1e6, trunk_macs / 1e6, traffic["table_multiply_adds"].get<double>() / 1e6, fma_peak / 1e9,
               out["compute_bound_tok_per_s"].get<double>());
    fmt::print("achieved     trunk matvecs {:.1f} G multiply-adds/s ({:.1f} GB/s); {:.2f} lookups/ns in lut_apply (with the "
               "down tables' builds)\n",
               out["trunk_multiply_adds_per_s"].get<double>() / 1e9, out["trunk_bytes_per_s"].get<double>() / 1e9,
               out["lookups_per_ns"].get<double>());
}

}  // namespace

void add_bench_command(CLI::App& app) {
    auto args = std::make_shared<BenchArgs>();
    CLI::App* bench = app.add_subcommand("bench", "Measure decode and prefill speed, and where each token's time goes");
    bench->add_option("MODEL", args->model, "Container directory")->required();
    bench->add_option("-n,--tokens", args->tokens, "Decode tokens per run")->default_val(64)->check(CLI::Range(0, 1 << 20));
    bench->add_option("--skip", args->skip,
                      "Decode tokens at the start of each run left out of every decode figure (the cache filling: report the steady state)")
        ->default_val(0)
        ->check(CLI::Range(0, 1 << 20));
    bench->add_option("--prompt", args->prompt, "Prompt tokens per run (random ids)")->default_val(64)->check(CLI::Range(0, 1 << 20));
    bench->add_option("--runs", args->runs, "Runs; speeds are the median")->default_val(3)->check(CLI::Range(1, 1000));
    bench->add_option("--warmup", args->warmup, "Untimed runs before them (a whole prompt and one decode token each), as llama-bench's warm-up")
        ->default_str("1; 0 with --no-warm")
        ->check(CLI::Range(0, 100));
    bench->add_option("--prompt-ids", args->prompt_ids, "A file of the prompt's token ids (its first --prompt); else random ids from --seed")
        ->default_str("none");
    add_threads_option(bench, args->threads);
    bench->add_option("--budget", args->budget, "RAM budget (e.g. 8G)")->default_str("the recommended budget (waste plan)");
    bench->add_option("--policy", args->policy, "Expert cache policy: reuse (ours, the default), lru, lfru")->default_val("default");
    bench->add_option("--seed", args->seed, "Seed of the random prompt (and of the decode sampler with --temp)")->default_val(1);
    bench->add_option("--temp", args->temperature,
                      "Decode sampling temperature (0 = greedy: the argmax); each run draws the same tokens (the sampler is seeded by --seed)")
        ->default_val(0)
        ->check(CLI::Range(0.0, 100.0));
    bench->add_flag("!--no-warm", args->warm, "Do not fill the expert cache before timing");
    bench->add_option("--parallel", args->parallel,
                      "Streams decoding together (batched steps), each with its own random prompt, beside the same streams one at a time")
        ->default_val(1)
        ->check(CLI::Range(1, 256));
    bench->add_flag("--json", args->json_output, "Print JSON (documented in docs/CLI.md)");
    add_stream_options(bench, args->stream);
    bench->callback([args] {
        if (args->skip > 0 && args->skip >= args->tokens)
            throw CLI::ValidationError("--skip", fmt::format("{} leaves none of the {} decode tokens to measure", args->skip, args->tokens));
        run_bench(*args);
    });
}

}  // namespace waste_cli
