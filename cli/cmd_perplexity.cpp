// cmd_perplexity.cpp — `waste perplexity MODEL FILE`: held-out perplexity on
// the engine's own forward pass, with training/evaluate.py's protocol so the
// figure compares with the PyTorch model's: the token stream cut into
// non-overlapping windows of --window + 1 tokens (window i is tokens
// [i*W, i*W + W]), each window from an empty state, perplexity =
// exp(mean next-token NLL over the W predicted positions of every window).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_common.h"
#include "input_file.h"
#include "stream_options.h"

namespace waste_cli {
namespace {

// A token stream a container may hold at most (the file is read whole).
constexpr uint64_t max_stream_bytes = uint64_t{1} << 32;

struct PerplexityArgs {
    std::string model;
    std::string file;
    uint32_t window = 128;
    std::string format = "u16";
    uint64_t max_windows = 0;
    uint64_t bytes = 0;
    std::string budget;
    unsigned threads = 0;
    bool verify = false;
    bool json_output = false;
    std::string policy = "default";
    StreamArgs stream;
};


// Little-endian uint16 ids, each checked against the vocabulary.
std::vector<int32_t> u16_stream(const std::string& bytes, const std::string& path, int64_t vocab) {
    if (bytes.size() % 2)
        throw RuntimeFailure{fmt::format("{} has {} bytes, an odd number: not a uint16 token stream", path, bytes.size())};
    std::vector<int32_t> ids(bytes.size() / 2);
    for (size_t i = 0; i < ids.size(); ++i) {
        const auto lo = static_cast<uint8_t>(bytes[2 * i]), hi = static_cast<uint8_t>(bytes[2 * i + 1]);
        ids[i] = lo | (hi << 8);
        if (ids[i] >= vocab)
            throw RuntimeFailure{fmt::format("{}: token {} at byte offset {} is outside the model's vocabulary of {}", path, ids[i],
                                             2 * i, vocab)};
    }
    return ids;
}

// [BOS] + the text in plain mode (specials' text is ordinary bytes).
std::vector<int32_t> text_stream(waste_model* model, const std::string& bytes, const std::string& path) {
    waste_tokenizer* raw = nullptr;
    waste_error error{};
    if (waste_model_tokenizer(model, nullptr, &raw, &error) != WASTE_OK) fail_with(error, "--format text needs the container's tokenizer");
    const TokenizerHandle tokenizer(raw);
    const int32_t bos = waste_tokenizer_bos(tokenizer.get());
    if (bos < 0) throw RuntimeFailure{"--format text: the container's tokenizer has no BOS token to start the stream with"};
    int32_t* ids = nullptr;
    size_t count = 0;
    if (waste_tokenizer_tokenize(tokenizer.get(), bytes.data(), bytes.size(), 0, &ids, &count, &error) != WASTE_OK)
        fail_with(error, "cannot tokenize " + path);
    std::vector<int32_t> out{bos};
    out.insert(out.end(), ids, ids + count);
    waste_tokens_free(ids);
    return out;
}

int64_t model_vocab(waste_model* model) {
    char* text = nullptr;
    waste_error error{};
    if (waste_model_info_json(model, &text, &error) != WASTE_OK) fail_with(error, "info");
    return nlohmann::json::parse(take_string(text)).at("vocab").get<int64_t>();
}

void run_perplexity(const PerplexityArgs& args) {
    const uint32_t window = args.window;
    const waste_open_options options =
        model_open_options(window + 1, args.threads, args.budget, args.verify, args.policy, args.stream);
    const std::string bytes = read_input_file(args.file, max_stream_bytes, args.format == "text" ? "the text" : "the token stream");
    ModelHandle model = open_model(args.model, options);
    report_open(args.stream, model.get(), args.json_output);
    const std::vector<int32_t> stream = args.format == "text" ? text_stream(model.get(), bytes, args.file)
                                                              : u16_stream(bytes, args.file, model_vocab(model.get()));
    if (stream.size() < static_cast<size_t>(window) + 1)
        throw RuntimeFailure{fmt::format("{} holds {} tokens; one window of --window {} needs {}", args.file, stream.size(), window,
                                         window + 1)};
    uint64_t windows = (stream.size() - 1) / window;
    if (args.max_windows) windows = std::min(windows, args.max_windows);
    // UTF-8 bytes behind the stream, for bits per byte: the text itself, or --bytes.
    const uint64_t text_bytes = args.format == "text" ? bytes.size() : args.bytes;

    waste_session* raw_session = nullptr;
    waste_error error{};
    if (waste_session_create(model.get(), &raw_session, &error) != WASTE_OK) fail_with(error, "cannot start a session");
    const SessionHandle session(raw_session);
    apply_session_options(args.stream, session.get());

    std::vector<double> logprobs(window);
    double nll = 0;
    const auto start = std::chrono::steady_clock::now();
    for (uint64_t w = 0; w < windows; ++w) {
        if (waste_session_reset(session.get(), &error) != WASTE_OK) fail_with(error, "reset");
        const int32_t* tokens = stream.data() + w * window;
        if (waste_session_eval_logprobs(session.get(), tokens, window + 1, logprobs.data(), window, &error) != WASTE_OK)
            fail_with(error, fmt::format("window {} (tokens {}..{})", w, w * window, w * window + window));
        for (const double lp : logprobs) nll -= lp;
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    finish_stream(args.stream, model.get(), session.get());

    const uint64_t predicted = windows * window, evaluated = windows * (window + 1);
    const double nll_per_token = nll / static_cast<double>(predicted);
    const double perplexity = std::exp(nll_per_token);
    // As evaluate.py: the bytes of the scored fraction of the stream.
    const double covered = static_cast<double>(predicted) / static_cast<double>(stream.size() - 1);
    const double bits_per_byte = text_bytes ? nll / std::log(2.0) / (static_cast<double>(text_bytes) * covered) : NAN;
    const double tokens_per_second = seconds > 0 ? static_cast<double>(evaluated) / seconds : 0.0;
    if (args.json_output) {
        nlohmann::json out{{"windows", windows},
                           {"window", window},
                           {"stream_tokens", stream.size()},
                           {"predicted_tokens", predicted},
                           {"evaluated_tokens", evaluated},
                           {"nll_per_token", nll_per_token},
                           {"perplexity", perplexity},
                           {"bits_per_byte", nullptr},
                           {"text_bytes", text_bytes},
                           {"seconds", seconds},
                           {"tokens_per_second", tokens_per_second}};
        if (text_bytes) out["bits_per_byte"] = bits_per_byte;
        fmt::print("{}\n", out.dump());
        return;
    }
    fmt::print("windows          {} of {} predicted tokens ({}-token stream)\n", windows, window, stream.size());
    fmt::print("predicted tokens {}\n", predicted);
    fmt::print("NLL per token    {:.5f} nats\n", nll_per_token);
    fmt::print("perplexity       {:.3f}\n", perplexity);
    if (text_bytes) fmt::print("bits per byte    {:.4f} ({} bytes of text)\n", bits_per_byte, text_bytes);
    else fmt::print("bits per byte    unknown (give --bytes with --format u16)\n");
    fmt::print("seconds          {:.2f} ({:.1f} evaluated tokens/s)\n", seconds, tokens_per_second);
}

}  // namespace

void add_perplexity_command(CLI::App& app) {
    auto args = std::make_shared<PerplexityArgs>();
    CLI::App* command = app.add_subcommand(
        "perplexity", "Held-out perplexity of a token stream or text on the engine (windows as training/evaluate.py)");
    command->add_option("MODEL", args->model, "Container directory")->required();
    command->add_option("FILE", args->file, "Token stream (little-endian uint16 ids) or UTF-8 text")->required();
    command->add_option("--window", args->window, "Predicted tokens per window (each window is --window + 1 tokens from an empty state)")
        ->default_val(128)
        ->check(CLI::Range(1, 1 << 20));
    command->add_option("--format", args->format, "FILE is u16 (token ids) or text (tokenized with the container's tokenizer, [BOS] first)")
        ->default_val("u16")
        ->check(CLI::IsMember(std::vector<std::string>{"u16", "text"}));
    command->add_option("--max-windows", args->max_windows, "Score only the first N windows (0 = all)")->default_val(0);
    command->add_option("--bytes", args->bytes, "UTF-8 bytes of the text behind a u16 stream, for bits per byte")->default_str("none");
    command->add_option("--budget", args->budget, "RAM budget (e.g. 8G)")->default_str("the recommended budget");
    add_threads_option(command, args->threads);
    command->add_flag("--verify", args->verify, "Check each expert record's CRC-32 when it is read");
    command->add_flag("--json", args->json_output, "Print JSON (documented in docs/CLI.md)");
    command->add_option("--policy", args->policy, "Expert cache policy: reuse (ours, the default), lru, lfru")->default_val("default");
    add_stream_options(command, args->stream);
    command->callback([args] { run_perplexity(*args); });
}

}  // namespace waste_cli
