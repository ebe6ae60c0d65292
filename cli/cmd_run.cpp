// cmd_run.cpp — `waste eval` (next-token distribution of a prompt of ids).
// `waste run` and `waste chat` are in cmd_generate.cpp and cmd_chat.cpp.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_common.h"
#include "image_prompt.h"
#include "stream_options.h"

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
    std::string policy = "default";
    StreamArgs stream;
    // eval
    std::string dump_hidden;
    std::string decode_ids;  // evaluated one at a time after the prompt: decode steps
    int top = 10;
    bool full = false;
    std::vector<std::string> images;  // --image, in order
};

void add_common(CLI::App* command, RunArgs& args) {
    command->add_option("MODEL", args.model, "Container directory")->required();
    command->add_option("--ids", args.ids, "Prompt as token ids, e.g. \"1 2 3\"")->required();
    command->add_option("--budget", args.budget, "RAM budget (e.g. 8G)")->default_str("the recommended budget");
    command->add_option("--ctx", args.context, "Context length in tokens")->default_val(4096)->check(CLI::Range(1, 1 << 24));
    add_threads_option(command, args.threads);
    command->add_flag("--verify", args.verify, "Check each expert record's CRC-32 when it is read");
    command->add_flag("--json", args.json_output, "Print JSON (documented in docs/CLI.md)");
    command->add_option("--policy", args.policy, "Expert cache policy: reuse (ours, the default), lru, lfru")->default_val("default");
    add_stream_options(command, args.stream);
}


struct Loaded {
    ModelHandle model;
    SessionHandle session;
};

Loaded load(const RunArgs& args) {
    waste_open_options options = model_open_options(args.context, args.threads, args.budget, args.verify, args.policy, args.stream);
    options.vision = args.images.empty() ? 0 : 1;
    Loaded loaded{open_model(args.model, options), nullptr};
    report_open(args.stream, loaded.model.get(), args.json_output);
    waste_session* session = nullptr;
    waste_error error{};
    if (waste_session_create(loaded.model.get(), &session, &error) != WASTE_OK) fail_with(error, "session");
    loaded.session.reset(session);
    apply_session_options(args.stream, session);
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
    const uint32_t header[4] = {0x44494857u, slots, static_cast<uint32_t>(ids.size()), hidden};
    std::string bytes(reinterpret_cast<const char*>(header), sizeof header);
    bytes.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
    // The library's atomic writer: a full disk leaves no truncated dump behind.
    if (waste_file_write(path.c_str(), bytes.data(), bytes.size(), &error) != WASTE_OK) fail_with(error, "--dump-hidden");
}

void run_eval(const RunArgs& args) {
    const std::vector<int32_t> given_ids = parse_token_ids(args.ids);
    const std::vector<int32_t> decode_ids = args.decode_ids.empty() ? std::vector<int32_t>{} : parse_token_ids(args.decode_ids, false, "--decode-ids");
    Loaded loaded = load(args);
    // --image: each image's media block before the given ids, its pad expanded.
    std::vector<int32_t> ids = add_prompt_images(loaded.model.get(), loaded.session.get(), args.images);
    ids.insert(ids.end(), given_ids.begin(), given_ids.end());
    ids = expand_image_pads(loaded.session.get(), ids);
    if (args.dump_hidden.empty()) evaluate(loaded.session.get(), ids);
    else write_hidden_dump(loaded, ids, args.dump_hidden);
    const float* logits = nullptr;
    size_t vocab = 0;
    waste_error error{};
    // [1 + decode ids][vocab]: the logits after the prompt, then after each decode step (--full --json only)
    std::vector<std::vector<float>> step_logits;
    for (size_t step = 0;; ++step) {
        if (waste_session_logits(loaded.session.get(), &logits, &vocab, &error) != WASTE_OK) fail_with(error, "logits");
        if (args.full && args.json_output && !decode_ids.empty()) step_logits.emplace_back(logits, logits + vocab);
        if (step == decode_ids.size()) break;
        if (waste_session_eval(loaded.session.get(), &decode_ids[step], 1, &error) != WASTE_OK)
            fail_with(error, fmt::format("decode step {} (id {})", step + 1, decode_ids[step]));
    }
    finish_stream(args.stream, loaded.model.get(), loaded.session.get());
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
        if (!step_logits.empty()) out["step_logits"] = step_logits;
        fmt::print("{}\n", out.dump());
        return;
    }
    fmt::print("{} prompt tokens, vocabulary {}\n", ids.size(), vocab);
    for (size_t i = 0; i < top; ++i)
        fmt::print("{:>8}  logit {:>10.5f}  p {:.6f}\n", order[i], logits[order[i]], probability(order[i]));
    if (args.full)
        for (size_t i = 0; i < vocab; ++i) fmt::print("{} {:.7g}\n", i, logits[i]);
}

}  // namespace

void add_run_commands(CLI::App& app) {
    auto eval_args = std::make_shared<RunArgs>();
    CLI::App* eval = app.add_subcommand("eval", "Print the next-token distribution after a prompt of token ids");
    add_common(eval, *eval_args);
    eval->add_option("--top", eval_args->top, "How many of the most likely tokens to list")->default_val(10)->check(CLI::Range(0, 1 << 24));
    eval->add_flag("--full", eval_args->full, "Also print every logit");
    eval->add_option("--image", eval_args->images,
                     "An image (PNG, JPEG, GIF, WebP, BMP) whose media block goes before the ids; repeatable, at most 32 "
                     "(needs a container with a vision tower)")
        ->default_str("none");
    eval->add_option("--decode-ids", eval_args->decode_ids,
                     "Ids evaluated one at a time after the prompt (decode steps); with --full --json, "
                     "\"step_logits\" lists the logits after the prompt and after each")
        ->default_str("none");
    eval->add_option("--dump-hidden", eval_args->dump_hidden, "Write every layer's hidden state (WHID, python/README.md) to this file")->default_str("none");
    eval->callback([eval_args] { run_eval(*eval_args); });

}

}  // namespace waste_cli
