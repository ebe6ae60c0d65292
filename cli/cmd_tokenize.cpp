// cmd_tokenize.cpp — `waste tokenize` and `waste detokenize`: text <-> token
// ids with a model's tokenizer, or with a bare rank file and a named pattern
// (--rank-file, for checking against tiktoken).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <iterator>
#include <sstream>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_common.h"
#include "input_file.h"

namespace waste_cli {
namespace {

using nlohmann::json;


struct TokenizerArgs {
    std::vector<std::string> positional;  // MODEL then TEXT; TEXT alone with --rank-file
    std::string file;
    std::string rank_file;
    std::string tokenizer_json;
    std::string pattern;
    std::string specials_file;
    std::string ids;
    bool markup = false;
    bool json_output = false;
    bool stream = false;
    int bench_runs = 0;
};

std::string read_all(std::istream& in) {
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Why: a text to tokenize is held whole, with its ids (4 bytes each, at most
// one per byte); specials.json as the library bounds it (tokenizer_loader.h).
constexpr uint64_t max_text_bytes = uint64_t{1} << 30, max_specials_bytes = uint64_t{16} << 20;

// The tokenizer and what is left of the positionals after MODEL.
TokenizerHandle open_tokenizer(const TokenizerArgs& args, std::vector<std::string>& rest) {
    waste_tokenizer* tokenizer = nullptr;
    waste_error error{};
    const char* pattern = args.pattern.empty() ? nullptr : args.pattern.c_str();
    if (!args.tokenizer_json.empty()) {
        rest = args.positional;
        if (!args.rank_file.empty() || pattern || !args.specials_file.empty())
            throw CLI::ValidationError("--tokenizer-json", "a tokenizer.json goes without --rank-file, --pattern or --specials");
        if (waste_tokenizer_open_json(args.tokenizer_json.c_str(), &tokenizer, &error) != WASTE_OK)
            fail_with(error, "cannot load " + args.tokenizer_json);
        return TokenizerHandle(tokenizer);
    }
    if (!args.rank_file.empty()) {
        rest = args.positional;
        std::string specials;
        if (!args.specials_file.empty()) specials = read_input_file(args.specials_file, max_specials_bytes, "the specials file");
        if (!pattern) throw CLI::ValidationError("--pattern", "--rank-file needs --pattern (kimi, o200k, cl100k, gpt2)");
        if (waste_tokenizer_open(args.rank_file.c_str(), pattern, args.specials_file.empty() ? nullptr : specials.c_str(),
                                 &tokenizer, &error) != WASTE_OK)
            fail_with(error, "cannot load " + args.rank_file);
        return TokenizerHandle(tokenizer);
    }
    if (args.positional.empty()) throw CLI::ValidationError("MODEL", "a container directory (or --rank-file) is required");
    if (!args.specials_file.empty()) throw CLI::ValidationError("--specials", "--specials goes with --rank-file");
    rest.assign(args.positional.begin() + 1, args.positional.end());
    waste_open_options options;
    waste_open_options_init(&options);
    options.flags = WASTE_OPEN_METADATA_ONLY;
    ModelHandle model = open_model(args.positional[0], options);
    if (waste_model_tokenizer(model.get(), pattern, &tokenizer, &error) != WASTE_OK)
        fail_with(error, "tokenizer of " + args.positional[0]);
    return TokenizerHandle(tokenizer);
}

std::string input_text(const TokenizerArgs& args, const std::vector<std::string>& rest) {
    const int sources = static_cast<int>(!rest.empty()) + static_cast<int>(!args.file.empty());
    if (rest.size() > 1) throw CLI::ValidationError("TEXT", "give the text as one argument (quote it)");
    if (sources != 1) throw CLI::ValidationError("TEXT", "give exactly one of TEXT, --file F or - (standard input)");
    if (!args.file.empty()) return read_input_file(args.file, max_text_bytes, "the text file");
    if (rest[0] == "-") return read_all(std::cin);
    return rest[0];
}

std::vector<int32_t> tokenize(waste_tokenizer* tokenizer, const std::string& text, bool markup) {
    int32_t* tokens = nullptr;
    size_t count = 0;
    waste_error error{};
    if (waste_tokenizer_tokenize(tokenizer, text.data(), text.size(), markup ? WASTE_TOKENIZE_MARKUP : 0, &tokens, &count,
                                 &error) != WASTE_OK)
        fail_with(error, "tokenize");
    std::vector<int32_t> ids(tokens, tokens + count);
    waste_tokens_free(tokens);
    return ids;
}

// Tokenizes `runs` times and reports the median: the library's speed,
// without process start or rank-file loading.
void run_bench(waste_tokenizer* tokenizer, const std::string& text, const TokenizerArgs& args) {
    std::vector<double> seconds;
    size_t tokens = 0;
    for (int run = 0; run < args.bench_runs; ++run) {
        const auto start = std::chrono::steady_clock::now();
        tokens = tokenize(tokenizer, text, args.markup).size();
        seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    std::sort(seconds.begin(), seconds.end());
    const double median = seconds[seconds.size() / 2];
    json report = {{"bytes", text.size()},        {"tokens", tokens},
                   {"runs", args.bench_runs},     {"median_seconds", median},
                   {"min_seconds", seconds[0]},   {"tokens_per_second", tokens / median},
                   {"megabytes_per_second", text.size() / median / 1e6},
                   {"pattern", waste_tokenizer_pattern(tokenizer)}};
    fmt::print("{}\n", report.dump());
}

void write_bytes(const char* bytes, size_t length) {
    if (length) std::fwrite(bytes, 1, length, stdout);
}

void add_tokenizer_source_options(CLI::App* command, TokenizerArgs& args) {
    command->add_option("--rank-file", args.rank_file, "A tiktoken rank file instead of a model (needs --pattern)")->default_str("none");
    command->add_option("--tokenizer-json", args.tokenizer_json,
                        "A Hugging Face tokenizer.json instead of a model")->default_str("none");
    command->add_option("--pattern", args.pattern,
                        "Pre-tokenizer: kimi, o200k, cl100k or gpt2 (o200k_harmony: o200k with gpt-oss's specials)")
        ->default_str("the model's: o200k for gpt_oss, else kimi");
    command->add_option("--specials", args.specials_file, "specials.json for --rank-file")->default_str("none");
    command->add_flag("--markup", args.markup, "Markup mode: recognise special tokens (default: plain text)");
}

}  // namespace

void add_tokenize_commands(CLI::App& app) {
    auto tokenize_args = std::make_shared<TokenizerArgs>();
    CLI::App* tokenize_command = app.add_subcommand("tokenize", "Turn text into token ids");
    tokenize_command->add_option("MODEL TEXT", tokenize_args->positional,
                                 "Container directory, then the text ('-' reads standard input); "
                                 "with --rank-file or --tokenizer-json only the text");
    tokenize_command->add_option("--file", tokenize_args->file, "Read the text from a file")->default_str("none");
    tokenize_command->add_flag("--json", tokenize_args->json_output, "Print {\"tokens\": [...], \"count\": N, \"pattern\": P}");
    tokenize_command->add_option("--bench", tokenize_args->bench_runs,
                                 "Tokenize N times and print the median speed as JSON instead of the ids")
        ->check(CLI::Range(1, 1000))
        ->default_str("off");
    add_tokenizer_source_options(tokenize_command, *tokenize_args);
    tokenize_command->callback([tokenize_args] {
        const TokenizerArgs& args = *tokenize_args;
        std::vector<std::string> rest;
        TokenizerHandle tokenizer = open_tokenizer(args, rest);
        const std::string text = input_text(args, rest);
        if (args.bench_runs > 0) {
            run_bench(tokenizer.get(), text, args);
            return;
        }
        const std::vector<int32_t> ids = tokenize(tokenizer.get(), text, args.markup);
        if (args.json_output) {
            json report = {{"tokens", ids}, {"count", ids.size()}, {"pattern", waste_tokenizer_pattern(tokenizer.get())}};
            fmt::print("{}\n", report.dump());
        } else {
            fmt::print("{}\n", fmt::join(ids, " "));
        }
    });

    auto detokenize_args = std::make_shared<TokenizerArgs>();
    CLI::App* detokenize_command = app.add_subcommand(
        "detokenize", "Turn token ids into text (the exact bytes; a newline is added only on a terminal)");
    detokenize_command->add_option("MODEL", detokenize_args->positional, "Container directory (not with --rank-file)");
    detokenize_command->add_option("--ids", detokenize_args->ids, "Token ids: \"1 2 3\", \"1,2,3\" or \"[1,2,3]\"")->required();
    detokenize_command->add_flag("--json", detokenize_args->json_output,
                                 "Print {\"text\": ...} (invalid UTF-8 shown as U+FFFD)");
    detokenize_command->add_flag("--stream", detokenize_args->stream,
                                 "Use the streaming detokenizer, one id at a time (same bytes)");
    add_tokenizer_source_options(detokenize_command, *detokenize_args);
    detokenize_command->callback([detokenize_args] {
        const TokenizerArgs& args = *detokenize_args;
        std::vector<std::string> rest;
        TokenizerHandle tokenizer = open_tokenizer(args, rest);
        if (!rest.empty()) throw CLI::ValidationError("MODEL", "unexpected argument '" + rest[0] + "'");
        const std::vector<int32_t> ids = parse_token_ids(args.ids, /*allow_empty=*/true);
        const uint32_t flags = args.markup ? WASTE_TOKENIZE_MARKUP : 0;
        std::string text;
        waste_error error{};
        if (args.stream) {
            waste_detokenizer* raw = nullptr;
            if (waste_detokenizer_create(tokenizer.get(), flags, &raw, &error) != WASTE_OK) fail_with(error, "detokenize");
            std::unique_ptr<waste_detokenizer, void (*)(waste_detokenizer*)> stream(raw, waste_detokenizer_free);
            const char* bytes = nullptr;
            size_t length = 0;
            for (const int32_t id : ids) {
                if (waste_detokenizer_push(stream.get(), id, &bytes, &length, &error) != WASTE_OK)
                    fail_with(error, "detokenize");
                text.append(bytes, length);
            }
            if (waste_detokenizer_finish(stream.get(), &bytes, &length, &error) != WASTE_OK) fail_with(error, "detokenize");
            text.append(bytes, length);
        } else {
            char* bytes = nullptr;
            size_t length = 0;
            if (waste_tokenizer_detokenize(tokenizer.get(), ids.data(), ids.size(), flags, &bytes, &length, &error) !=
                WASTE_OK)
                fail_with(error, "detokenize");
            text.assign(bytes, length);
            waste_string_free(bytes);
        }
        if (args.json_output) {
            fmt::print("{}\n", json{{"text", text}}.dump(-1, ' ', false, json::error_handler_t::replace));
            return;
        }
        write_bytes(text.data(), text.size());
        if (isatty(STDOUT_FILENO)) std::fputc('\n', stdout);
    });
}

}  // namespace waste_cli
