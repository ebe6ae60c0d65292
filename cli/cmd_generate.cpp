// cmd_generate.cpp — `waste run`: text (or ids) in, generated text out.
//
// The prompt: PROMPT, `-` or piped stdin, --file F, or --ids "1 2 3". Text
// goes through the container's chat template (a user turn, optionally after
// a --system turn, then the answer opener) unless --raw or the container has
// no chat.json; --ids go to the model as they are.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <iterator>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "generate_support.h"
#include "image_prompt.h"
#include "input_file.h"

namespace waste_cli {
namespace {

struct RunArgs {
    GenerateArgs gen;
    std::string prompt;
    std::string file;
    std::string ids;
    bool json_output = false;
};

// Why 256 MiB: 16 bytes for each token of the largest context (--ctx is at
// most 2^24 tokens); a longer prompt cannot fit.
constexpr uint64_t max_prompt_bytes = uint64_t{256} << 20;

std::string read_stream(std::istream& in) { return std::string(std::istreambuf_iterator<char>(in), {}); }

// Exactly one prompt source; none given with a terminal on stdin is a usage error.
std::string prompt_text(const RunArgs& args) {
    const int sources = !args.prompt.empty() + !args.file.empty() + !args.ids.empty();
    if (sources > 1) throw CLI::ValidationError("prompt", "give one of PROMPT, --file, --ids (or - for stdin)");
    if (!args.file.empty()) return read_input_file(args.file, max_prompt_bytes, "the prompt file");
    if (args.prompt == "-" || (sources == 0 && !isatty(STDIN_FILENO))) return read_stream(std::cin);
    if (sources == 0) throw CLI::ValidationError("prompt", "no prompt: give PROMPT, --file F, --ids, or pipe text to stdin");
    return args.prompt;
}

std::vector<int32_t> prompt_tokens(const RunArgs& args, const Generator& g, bool& templated) {
    templated = false;
    // --image: each image through the tower now; its media block goes first
    // (into the user turn with a template), its pads expanded at the end.
    const std::vector<int32_t> blocks = add_prompt_images(g.model.get(), g.session.get(), args.gen.images);
    if (!args.ids.empty()) {
        if (!args.prompt.empty() || !args.file.empty())
            throw CLI::ValidationError("prompt", "give one of PROMPT, --file, --ids (or - for stdin)");
        std::vector<int32_t> ids = blocks;
        const std::vector<int32_t> given = parse_token_ids(args.ids);
        ids.insert(ids.end(), given.begin(), given.end());
        return expand_image_pads(g.session.get(), ids);
    }
    const std::string text = prompt_text(args);
    if (!g.tokenizer)
        throw RuntimeFailure{args.gen.model + " has no tokenizer.model, so it takes token ids only: use --ids \"1 2 3\""};
    if (!g.chat) {
        if (!args.gen.system.empty())
            throw RuntimeFailure{"--system needs a chat template, and " + (g.chat_missing.empty() ? std::string("--raw skips it") : g.chat_missing)};
        std::vector<int32_t> ids = blocks;
        const std::vector<int32_t> plain = tokenize(g, text, 0);  // plain: a prompt's "<|open|>" is text, not a control token
        ids.insert(ids.end(), plain.begin(), plain.end());
        return expand_image_pads(g.session.get(), ids);
    }
    templated = true;
    std::vector<waste_chat_message> messages;
    if (!args.gen.system.empty()) messages.push_back({"system", args.gen.system.data(), args.gen.system.size()});
    if (blocks.empty()) messages.push_back({"user", text.data(), text.size()});
    int32_t* ids = nullptr;
    size_t count = 0;
    waste_error error{};
    if (!messages.empty() &&
        waste_chat_tokenize(g.chat.get(), g.tokenizer.get(), messages.data(), messages.size(), blocks.empty() ? 1 : 0, &ids, &count,
                            &error) != WASTE_OK)
        fail_with(error, "cannot build the prompt from the chat template");
    std::vector<int32_t> out(ids, ids + count);
    waste_tokens_free(ids);
    if (blocks.empty()) return out;
    const std::vector<int32_t> user = user_turn_with_images(g, blocks, text);
    out.insert(out.end(), user.begin(), user.end());
    return expand_image_pads(g.session.get(), out);
}

// In chat form, the assistant's closing markup also ends the answer when it is one token.
std::vector<int32_t> answer_stop_tokens(const Generator& g) {
    if (!g.chat || !g.tokenizer) return {};
    const char *prefix = nullptr, *suffix = nullptr;
    if (waste_chat_template_role(g.chat.get(), "assistant", &prefix, &suffix, nullptr) != WASTE_OK || !*suffix) return {};
    const auto ids = tokenize(g, suffix, WASTE_TOKENIZE_MARKUP);
    return ids.size() == 1 ? ids : std::vector<int32_t>{};
}

void run_generate(RunArgs& args) {
    Generator g = open_generator(args.gen, true, args.json_output);
    bool templated = false;
    const std::vector<int32_t> prompt = prompt_tokens(args, g, templated);
    if (!g.chat && !g.chat_missing.empty() && args.ids.empty() && !args.gen.quiet && !args.json_output)
        fmt::print(stderr, "note: {}; the prompt goes to the model as it is\n", g.chat_missing);
    const bool terminal = isatty(STDERR_FILENO) && !args.gen.quiet && !args.json_output;
    const auto start = std::chrono::steady_clock::now();
    if (terminal) {
        fmt::print(stderr, "[prefill {} tokens]", prompt.size());
        std::fflush(stderr);
    }
    waste_error error{};
    if (waste_session_eval(g.session.get(), prompt.data(), prompt.size(), &error) != WASTE_OK) {
        if (terminal) fmt::print(stderr, "\r\033[K");
        fail_with(error, "cannot evaluate the prompt");
    }
    if (terminal) fmt::print(stderr, "\r\033[K");
    const auto prompt_done = std::chrono::steady_clock::now();
    GenerationOutput out;
    out.print_text = !args.json_output;
    // A live status line only when it cannot garble the text: stdout elsewhere.
    out.status_line = terminal && !isatty(STDOUT_FILENO);
    // Only an answer opened by the template ends at the template's closing markup.
    const std::vector<int32_t> stop_tokens = templated ? answer_stop_tokens(g) : std::vector<int32_t>{};
    const waste_generate_result result = args.gen.tokens > 0 ? generate(g, args.gen, out, stop_tokens) : waste_generate_result{0, WASTE_STOP_LENGTH, -1};
    const auto end = std::chrono::steady_clock::now();
    finish_stream(args.gen.stream, g.model.get(), g.session.get());
    const double prompt_seconds = std::chrono::duration<double>(prompt_done - start).count();
    const double gen_seconds = std::chrono::duration<double>(end - prompt_done).count();
    waste_session_stats stats{};
    waste_session_stats_get(g.session.get(), &stats, &error);
    const uint64_t lookups = stats.expert_hits + stats.expert_misses;
    if (args.json_output) {
        nlohmann::json j;
        j["text"] = out.text;  // invalid UTF-8 is replaced by U+FFFD in the dump
        j["tokens"] = out.tokens;
        j["logprobs"] = out.logprobs;
        j["stop_reason"] = stop_reason_name(result.stop_reason);
        j["prompt_tokens"] = prompt.size();
        j["chat_template"] = templated;
        j["prompt_seconds"] = prompt_seconds;
        j["prompt_tok_per_s"] = prompt_seconds > 0 ? prompt.size() / prompt_seconds : 0;
        j["generate_seconds"] = gen_seconds;
        // The first token comes from the prompt's logits; each other one took a decode step.
        j["tok_per_s"] = out.tokens.size() > 1 && gen_seconds > 0 ? (out.tokens.size() - 1) / gen_seconds : 0;
        j["expert_hits"] = stats.expert_hits;
        j["expert_misses"] = stats.expert_misses;
        j["expert_hit_rate"] = lookups ? static_cast<double>(stats.expert_hits) / lookups : 0;
        j["bytes_read"] = stats.bytes_read;
        j["io_seconds"] = stats.io_seconds;
        j["compute_seconds"] = stats.compute_seconds;
        j["prefetched"] = stats.prefetched;
        j["prefetch_used"] = stats.prefetch_used;
        j["prefetch_bytes"] = stats.prefetch_bytes;
        j["prefetch_late"] = stats.prefetch_late;
        j["prefetch_wasted"] = stats.prefetch_wasted;
        // the demand lookups found in the cache without lookahead's help
        j["cache_hit_rate"] = lookups ? static_cast<double>(stats.expert_hits - stats.prefetch_used) / lookups : 0;
        j["seed"] = g.seed ? nlohmann::json(*g.seed) : nlohmann::json(nullptr);  // null: greedy
        fmt::print("{}\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
        return;
    }
    fmt::print("\n");
    std::fflush(stdout);
    if (!args.gen.quiet) fmt::print(stderr, "{}\n", summary_line(out, gen_seconds));
}

}  // namespace

void add_generate_commands(CLI::App& app) {
    auto args = std::make_shared<RunArgs>();
    CLI::App* run = app.add_subcommand("run", "Generate text after a prompt (PROMPT, - or piped stdin, --file, or --ids)");
    add_generate_options(run, args->gen, 256);  // MODEL first: positionals bind in order
    run->add_option("PROMPT", args->prompt, "The prompt text; - reads stdin (also read when piped and no prompt is given)");
    run->add_option("--file", args->file, "Read the prompt from this file")->default_str("none");
    run->add_option("--ids", args->ids, "The prompt as token ids, e.g. \"1 2 3\" (no template)")->default_str("none");
    run->add_option("--image", args->gen.images,
                    "An image (PNG, JPEG, GIF, WebP, BMP) for the prompt: its media block goes first (in the user turn "
                    "with a template); repeatable, at most 32 (needs a container with a vision tower)")
        ->default_str("none");
    run->add_flag("--json", args->json_output, "One JSON object at the end instead of streamed text (docs/CLI.md)");
    run->callback([args] { run_generate(*args); });
    add_chat_command(app);
}

}  // namespace waste_cli
