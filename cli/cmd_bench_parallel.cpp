// cmd_bench_parallel.cpp — `waste bench --parallel N` (bench_parallel.h).
//
// Each run resets the N sessions and prefills their prompts (untimed), then
// times two decodes of the same greedy tokens: "together" — N streams
// stepped as one batch per token (waste_session_eval_batch) — and "alone" —
// each stream's tokens one decode step at a time, stream after stream. The
// session stats give what each looked up and read; a batched step's
// lookups are the distinct experts of its layers (each read or found once),
// set beside E·(1 − (1 − k/E)^N) a layer, the union N independent streams
// routed uniformly at random would touch.
#include <chrono>
#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench_parallel.h"
#include "cli_common.h"

namespace waste_cli {
namespace {

using nlohmann::json;
using SessionPtr = std::unique_ptr<waste_session, void (*)(waste_session*)>;

struct Totals {
    uint64_t lookups = 0, bytes_read = 0;
    double io_seconds = 0;
};

Totals totals(const std::vector<SessionPtr>& sessions) {
    Totals t;
    for (const SessionPtr& s : sessions) {
        waste_session_stats stats{};
        waste_session_stats_get(s.get(), &stats, nullptr);
        t.lookups += stats.expert_hits + stats.expert_misses;
        t.bytes_read += stats.bytes_read;
        t.io_seconds += stats.io_seconds;
    }
    return t;
}

}  // namespace

void run_parallel_bench(const ParallelBench& args) {
    waste_error error{};
    const size_t n = static_cast<size_t>(args.streams);
    waste_open_options options = model_open_options(static_cast<uint32_t>(args.prompt + args.tokens + 1), args.threads, args.budget,
                                                    /*verify=*/false, args.policy, args.stream);
    options.sessions = static_cast<uint32_t>(n);
    ModelHandle model = open_model(args.model, options);
    report_open(args.stream, model.get(), args.json_output);
    char* text = nullptr;
    if (waste_model_info_json(model.get(), &text, &error) != WASTE_OK) fail_with(error, "info");
    const json info = json::parse(text);
    waste_string_free(text);
    uint64_t warmed = 0;
    if (args.warm && waste_model_warm_cache(model.get(), &warmed, &error) != WASTE_OK) fail_with(error, "warming the cache");

    std::vector<SessionPtr> sessions;
    std::vector<waste_session*> raw;
    std::vector<std::vector<int32_t>> prompts(n);
    const int vocab = info["vocab"].get<int>();
    for (size_t i = 0; i < n; ++i) {
        waste_session* s = nullptr;
        if (waste_session_create(model.get(), &s, &error) != WASTE_OK) fail_with(error, "session");
        sessions.emplace_back(s, waste_session_free);
        raw.push_back(s);
        apply_session_options(args.stream, s);
        std::mt19937 random(args.seed + static_cast<uint32_t>(i));
        for (int t = 0; t < args.prompt; ++t) prompts[i].push_back(static_cast<int32_t>(random() % static_cast<uint32_t>(vocab)));
    }
    auto prefill = [&] {
        for (size_t i = 0; i < n; ++i) {
            if (waste_session_reset(raw[i], &error) != WASTE_OK) fail_with(error, "reset");
            if (!prompts[i].empty() && waste_session_eval(raw[i], prompts[i].data(), prompts[i].size(), &error) != WASTE_OK)
                fail_with(error, "prefill");
        }
    };

    std::vector<double> together_rates, alone_rates;
    Totals together_use{}, alone_use{};
    const int steps = std::max(args.tokens, 1);
    for (int run = 0; run < args.runs; ++run) {
        // Together: one batch per step, each stream's argmax fed back.
        prefill();
        std::vector<std::vector<int32_t>> generated(n);
        std::vector<int32_t> next(n);
        for (size_t i = 0; i < n; ++i) next[i] = prompts[i].empty() ? 0 : greedy_token(raw[i]);
        Totals before = totals(sessions);
        auto start = std::chrono::steady_clock::now();
        for (int step = 0; step < steps; ++step) {
            if (waste_session_eval_batch(raw.data(), next.data(), n, &error) != WASTE_OK) fail_with(error, "batched decode");
            for (size_t i = 0; i < n; ++i) {
                generated[i].push_back(next[i]);
                next[i] = greedy_token(raw[i]);
            }
        }
        double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        together_rates.push_back(static_cast<double>(n) * steps / seconds);
        Totals after = totals(sessions);
        together_use = {after.lookups - before.lookups, after.bytes_read - before.bytes_read, after.io_seconds - before.io_seconds};

        // Alone: the same tokens, one stream after another, one step at a time.
        prefill();
        before = totals(sessions);
        start = std::chrono::steady_clock::now();
        for (size_t i = 0; i < n; ++i)
            for (int32_t token : generated[i])
                if (waste_session_eval(raw[i], &token, 1, &error) != WASTE_OK) fail_with(error, "decode");
        seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        alone_rates.push_back(static_cast<double>(n) * steps / seconds);
        after = totals(sessions);
        alone_use = {after.lookups - before.lookups, after.bytes_read - before.bytes_read, after.io_seconds - before.io_seconds};
    }
    const double moe_layers = info["moe_layers"].get<double>(), experts = info["experts"].get<double>(),
                 top_k = info["top_k"].get<double>();
    const double union_bound = moe_layers * experts * (1 - std::pow(1 - top_k / experts, static_cast<double>(n)));
    const double generated_tokens = static_cast<double>(n) * steps;
    const double aggregate = median(together_rates), alone = median(alone_rates);
    json out;
    out["model"] = args.model;
    out["arch"] = info["arch"];
    out["threads"] = args.threads;
    out["lut_mode"] = info["lut_mode"];
    out["cached_records"] = warmed;
    out["parallel"] = n;
    out["prompt_tokens"] = args.prompt;
    out["decode_tokens_per_stream"] = steps;
    out["runs"] = args.runs;
    out["aggregate_tok_per_s"] = aggregate;
    out["aggregate_tok_per_s_runs"] = together_rates;
    out["per_stream_tok_per_s"] = aggregate / static_cast<double>(n);
    out["one_at_a_time_tok_per_s"] = alone;
    out["one_at_a_time_tok_per_s_runs"] = alone_rates;
    out["gain"] = alone > 0 ? aggregate / alone : 0;
    out["distinct_experts_per_step"] = together_use.lookups / static_cast<double>(steps);
    out["union_bound_experts_per_step"] = union_bound;
    out["experts_per_step_one_at_a_time"] = alone_use.lookups / static_cast<double>(steps);
    out["bytes_read_per_token"] = together_use.bytes_read / generated_tokens;
    out["bytes_read_per_token_one_at_a_time"] = alone_use.bytes_read / generated_tokens;
    out["io_wait_ms_per_step"] = together_use.io_seconds * 1e3 / steps;
    if (args.json_output) {
        fmt::print("{}\n", out.dump());
        return;
    }
    fmt::print("model        {} ({}), {} threads, {} expert records cached, {} mode\n", args.model, info["arch"].get<std::string>(),
               args.threads ? std::to_string(args.threads) : "all", warmed, info["lut_mode"].get<std::string>());
    fmt::print("streams      {} at once, {} prompt tokens each, {} decode steps, median of {} runs\n", n, args.prompt, steps, args.runs);
    fmt::print("together     {:.2f} tok/s in all ({:.2f} a stream); one at a time {:.2f} tok/s: {:.2f}x\n", aggregate,
               aggregate / static_cast<double>(n), alone, out["gain"].get<double>());
    fmt::print("experts      {:.1f} looked up a batched step (uniform routing's union: {:.1f}; one at a time {:.1f} for the same tokens)\n",
               out["distinct_experts_per_step"].get<double>(), union_bound, out["experts_per_step_one_at_a_time"].get<double>());
    fmt::print("reads        {:.2f} MB a generated token together, {:.2f} one at a time\n", out["bytes_read_per_token"].get<double>() / 1e6,
               out["bytes_read_per_token_one_at_a_time"].get<double>() / 1e6);
}

}  // namespace waste_cli
