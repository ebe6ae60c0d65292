// cmd_run.cpp — `waste eval` (next-token distribution of a prompt of ids)
// and `waste run` (greedy generation from ids).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_common.h"

namespace waste_cli {
namespace {

using nlohmann::json;

struct RunArgs {
    std::string model;
    std::string ids;
    std::string budget;
    uint32_t context = 4096;
    unsigned threads = 0;
    bool verify = false;
    bool json_output = false;
    uint32_t chunk = 64;
    std::string policy = "default";
    // eval
    std::string dump_hidden;
    int top = 10;
    bool full = false;
    // run
    int tokens = 32;
    double temperature = 0;
};

std::vector<int32_t> parse_ids(const std::string& text) {
    std::vector<int32_t> ids;
    std::string item;
    std::string normalised = text;
    std::replace(normalised.begin(), normalised.end(), ',', ' ');
    std::istringstream in(normalised);
    while (in >> item) {
        size_t used = 0;
        long long value = 0;
        try {
            value = std::stoll(item, &used);
        } catch (...) {
            used = 0;
        }
        if (used != item.size() || value < 0 || value > INT32_MAX)
            throw CLI::ValidationError("--ids", "'" + item + "' is not a token id (a non-negative integer)");
        ids.push_back(static_cast<int32_t>(value));
    }
    if (ids.empty()) throw CLI::ValidationError("--ids", "no token ids given");
    return ids;
}

void add_common(CLI::App* command, RunArgs& args) {
    command->add_option("MODEL", args.model, "Container directory")->required();
    command->add_option("--ids", args.ids, "Prompt as token ids, e.g. \"1 2 3\"")->required();
    command->add_option("--budget", args.budget, "RAM budget (e.g. 8G); default: the recommended budget");
    command->add_option("--ctx", args.context, "Context length in tokens")->default_val(4096)->check(CLI::Range(1, 1 << 24));
    command->add_option("--threads", args.threads, "Compute threads (0 = one per core)")->default_val(0);
    command->add_flag("--verify", args.verify, "Check each expert record's CRC-32 when it is read");
    command->add_flag("--json", args.json_output, "Print JSON (documented in docs/CLI.md)");
    command->add_option("--policy", args.policy, "Expert cache policy: reuse (ours, the default), lru, lfru")->default_val("default");
    command->add_option("--chunk", args.chunk, "Prefill chunk in tokens (1 = token by token)")->default_val(64)->check(CLI::Range(1, 64));
}

struct SessionCloser {
    void operator()(waste_session* session) const { waste_session_free(session); }
};
using SessionHandle = std::unique_ptr<waste_session, SessionCloser>;

struct Loaded {
    ModelHandle model;
    SessionHandle session;
};

Loaded load(const RunArgs& args) {
    waste_open_options options;
    waste_open_options_init(&options);
    options.context_length = args.context;
    options.threads = args.threads;
    options.budget_bytes = args.budget.empty() ? 0 : parse_size(args.budget);
    if (args.verify) options.flags |= WASTE_OPEN_VERIFY_CHECKSUMS;
    waste_error policy_error{};
    if (waste_cache_policy_parse(args.policy.c_str(), &options.cache_policy, &policy_error) != WASTE_OK)
        throw CLI::ValidationError("--policy", policy_error.message);
    Loaded loaded{open_model(args.model, options), nullptr};
    waste_session* session = nullptr;
    waste_error error{};
    if (waste_session_create(loaded.model.get(), &session, &error) != WASTE_OK) fail_with(error, "session");
    loaded.session.reset(session);
    if (waste_session_set_prefill_chunk(session, args.chunk, &error) != WASTE_OK) fail_with(error, "--chunk");
    return loaded;
}

void evaluate(waste_session* session, const std::vector<int32_t>& ids) {
    waste_error error{};
    if (waste_session_eval(session, ids.data(), ids.size(), &error) != WASTE_OK) fail_with(error, "evaluating the prompt");
}

// Evaluates the prompt and writes the WHID file (python/README.md): u32
// magic 'WHID', u32 layers+1, u32 tokens, u32 hidden, f32 [layers+1][tokens][hidden].
void write_hidden_dump(Loaded& loaded, const std::vector<int32_t>& ids, const std::string& path) {
    char* text = nullptr;
    waste_error error{};
    if (waste_model_info_json(loaded.model.get(), &text, &error) != WASTE_OK) fail_with(error, "info");
    const json info = json::parse(take_string(text));
    const uint32_t slots = info["layers"].get<uint32_t>() + 1, hidden = info["hidden"].get<uint32_t>();
    std::vector<float> values(static_cast<size_t>(slots) * ids.size() * hidden);
    if (waste_session_eval_hidden(loaded.session.get(), ids.data(), ids.size(), values.data(), values.size(), &error) != WASTE_OK)
        fail_with(error, "evaluating the prompt");
    FILE* out = std::fopen(path.c_str(), "wb");
    if (!out) throw RuntimeFailure{"cannot write " + path};
    const uint32_t header[4] = {0x44494857u, slots, static_cast<uint32_t>(ids.size()), hidden};
    const bool ok = std::fwrite(header, sizeof header, 1, out) == 1 &&
                    std::fwrite(values.data(), sizeof(float), values.size(), out) == values.size();
    if (std::fclose(out) != 0 || !ok) throw RuntimeFailure{"cannot write " + path};
}

void run_eval(const RunArgs& args) {
    const std::vector<int32_t> ids = parse_ids(args.ids);
    Loaded loaded = load(args);
    if (args.dump_hidden.empty()) evaluate(loaded.session.get(), ids);
    else write_hidden_dump(loaded, ids, args.dump_hidden);
    const float* logits = nullptr;
    size_t vocab = 0;
    waste_error error{};
    if (waste_session_logits(loaded.session.get(), &logits, &vocab, &error) != WASTE_OK) fail_with(error, "logits");
    // softmax in f64 for the reported probabilities
    const float max_logit = *std::max_element(logits, logits + vocab);
    double total = 0;
    for (size_t i = 0; i < vocab; ++i) total += std::exp(static_cast<double>(logits[i]) - max_logit);
    std::vector<int32_t> order(vocab);
    for (size_t i = 0; i < vocab; ++i) order[i] = static_cast<int32_t>(i);
    const size_t top = std::min<size_t>(static_cast<size_t>(std::max(args.top, 0)), vocab);
    std::partial_sort(order.begin(), order.begin() + top, order.end(),
                      [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
    auto probability = [&](int32_t id) { return std::exp(static_cast<double>(logits[id]) - max_logit) / total; };
    if (args.json_output) {
        json out;
        out["prompt_tokens"] = ids.size();
        out["vocab"] = vocab;
        out["top"] = json::array();
        for (size_t i = 0; i < top; ++i)
            out["top"].push_back({{"id", order[i]}, {"logit", logits[order[i]]}, {"prob", probability(order[i])}});
        if (args.full) out["logits"] = std::vector<float>(logits, logits + vocab);
        fmt::print("{}\n", out.dump());
        return;
    }
    fmt::print("{} prompt tokens, vocabulary {}\n", ids.size(), vocab);
    for (size_t i = 0; i < top; ++i)
        fmt::print("{:>8}  logit {:>10.5f}  p {:.6f}\n", order[i], logits[order[i]], probability(order[i]));
    if (args.full)
        for (size_t i = 0; i < vocab; ++i) fmt::print("{} {:.7g}\n", i, logits[i]);
}

struct StreamState {
    bool json_output = false;
};

int print_token(int32_t token, void* user) {
    if (!static_cast<StreamState*>(user)->json_output) {
        fmt::print("{} ", token);
        std::fflush(stdout);
    }
    return 0;
}

void run_generate(const RunArgs& args) {
    if (args.temperature != 0)
        throw RuntimeFailure{"--temp other than 0 needs the sampler, which this build does not have yet; use --temp 0 (greedy)"};
    const std::vector<int32_t> ids = parse_ids(args.ids);
    Loaded loaded = load(args);
    const auto start = std::chrono::steady_clock::now();
    evaluate(loaded.session.get(), ids);
    const auto prompt_done = std::chrono::steady_clock::now();
    std::vector<int32_t> out(static_cast<size_t>(args.tokens));
    size_t count = 0;
    StreamState stream{args.json_output};
    waste_error error{};
    if (args.tokens > 0 &&
        waste_session_generate_greedy(loaded.session.get(), out.size(), out.data(), &count, print_token, &stream, &error) != WASTE_OK)
        fail_with(error, "generating");
    const auto end = std::chrono::steady_clock::now();
    const double prompt_seconds = std::chrono::duration<double>(prompt_done - start).count();
    const double gen_seconds = std::chrono::duration<double>(end - prompt_done).count();
    // The first generated token comes from the prompt's logits; the other
    // count-1 were each one decode step.
    const double tok_per_s = count > 1 && gen_seconds > 0 ? static_cast<double>(count - 1) / gen_seconds : 0;
    waste_session_stats stats{};
    waste_session_stats_get(loaded.session.get(), &stats, &error);
    out.resize(count);
    const uint64_t lookups = stats.expert_hits + stats.expert_misses;
    const double hit_rate = lookups ? static_cast<double>(stats.expert_hits) / lookups : 0;
    if (args.json_output) {
        json result;
        result["tokens"] = out;
        result["prompt_tokens"] = ids.size();
        result["prompt_seconds"] = prompt_seconds;
        result["prompt_tok_per_s"] = prompt_seconds > 0 ? ids.size() / prompt_seconds : 0;
        result["tok_per_s"] = tok_per_s;
        result["expert_hits"] = stats.expert_hits;
        result["expert_misses"] = stats.expert_misses;
        result["expert_hit_rate"] = hit_rate;
        result["bytes_read"] = stats.bytes_read;
        result["io_seconds"] = stats.io_seconds;
        fmt::print("{}\n", result.dump());
        return;
    }
    fmt::print("\n");
    fmt::print(stderr, "[{} tokens, {:.2f} s, {:.2f} tok/s | experts {} hit / {} miss = {:.1f}% | {:.2f} GB read]\n", count,
               gen_seconds, tok_per_s, stats.expert_hits, stats.expert_misses, 100.0 * hit_rate, stats.bytes_read / 1e9);
}

}  // namespace

void add_run_commands(CLI::App& app) {
    auto eval_args = std::make_shared<RunArgs>();
    CLI::App* eval = app.add_subcommand("eval", "Print the next-token distribution after a prompt of token ids");
    add_common(eval, *eval_args);
    eval->add_option("--top", eval_args->top, "How many of the most likely tokens to list")->default_val(10)->check(CLI::Range(0, 1 << 24));
    eval->add_flag("--full", eval_args->full, "Also print every logit");
    eval->add_option("--dump-hidden", eval_args->dump_hidden, "Write every layer's hidden state (WHID, python/README.md) to this file");
    eval->callback([eval_args] { run_eval(*eval_args); });

    auto run_args = std::make_shared<RunArgs>();
    CLI::App* run = app.add_subcommand("run", "Generate tokens after a prompt of token ids");
    add_common(run, *run_args);
    run->add_option("-n,--tokens", run_args->tokens, "Tokens to generate")->default_val(32)->check(CLI::Range(0, 1 << 24));
    run->add_option("--temp", run_args->temperature, "Sampling temperature (0 = greedy)")->default_val(0.0);
    run->callback([run_args] { run_generate(*run_args); });
}

}  // namespace waste_cli
