#include "generate_support.h"

#include <unistd.h>

#include <cstdio>
#include <random>

#include <fmt/format.h>

#include "input_file.h"

namespace waste_cli {

void add_generate_options(CLI::App* command, GenerateArgs& args, int default_tokens) {
    command->add_option("MODEL", args.model, "Container directory")->required();
    command->add_option("-n,--tokens", args.tokens, "Most tokens to generate (per answer in chat)")
        ->default_val(default_tokens)
        ->check(CLI::Range(0, 1 << 24));
    command->add_option("--temp", args.temperature, "Sampling temperature (0 = greedy)")
        ->default_str("the model's: its generation_config.json, else 0.8")
        ->check(CLI::Range(0.0, 100.0));
    command->add_option("--top-k", args.top_k, "Keep the k most likely tokens (0 = off)")->default_str("the model's, else 0");
    command->add_option("--top-p", args.top_p, "Keep the most likely tokens up to this probability (1 = off)")
        ->default_str("the model's, else 0.95")
        ->check(CLI::Range(0.0, 1.0));
    command->add_option("--min-p", args.min_p, "Drop tokens less likely than min-p x the most likely (0 = off)")
        ->default_str("the model's, else 0")
        ->check(CLI::Range(0.0, 1.0));
    command->add_option_function<uint64_t>("--seed", [&args](const uint64_t& seed) { args.seed = seed; },
                                           "Sampling seed: the same seed gives the same text")
        ->default_str("a fresh one each run, reported (summary line; --json \"seed\")");
    command->add_option("--stop", args.stops, "Stop when the text contains this string (repeatable)")->expected(1)->take_all()->default_str("none");
    command->add_option("--system", args.system, "System prompt (a system turn from chat.json)")->default_str("none");
    command->add_flag("--raw", args.raw, "No chat template: the text goes to the model as it is");
    command->add_flag("--ignore-eos", args.ignore_eos, "Do not stop at the model's end-of-sequence token");
    command->add_option("--budget", args.budget, "RAM budget (e.g. 8G)")->default_str("the recommended budget (waste plan)");
    command->add_option("--ctx", args.context, "Context length in tokens")->default_val(4096)->check(CLI::Range(1, 1 << 24));
    add_threads_option(command, args.threads);
    command->add_flag("--verify", args.verify, "Check each expert record's CRC-32 when it is read");
    command->add_option("--policy", args.policy, "Expert cache policy: reuse (ours, the default), lru, lfru")->default_val("default");
    command->add_flag("-q,--quiet", args.quiet, "Only the generated text: no status or summary line");
    add_stream_options(command, args.stream);
    auto* grammar = command->add_option("--grammar", args.grammar_file, "Constrain the output to this GBNF grammar file (docs/GRAMMAR.md)")
                        ->default_str("none");
    auto* schema = command->add_option("--json-schema", args.schema_file, "Constrain the output to JSON valid under this JSON Schema file")
                       ->default_str("none");
    auto* json_value = command->add_flag("--json-value", args.json_value, "Constrain the output to one JSON value (any)");
    grammar->excludes(schema)->excludes(json_value);
    schema->excludes(json_value);
}

namespace {

// Grammar and schema files are a few KB; 1 MiB is the library's own bound.
constexpr uint64_t max_grammar_file_bytes = 1u << 20;

}  // namespace

// The user turn's tokens when images come with it: the template's user
// markup around the images' media blocks (markup) and the text (plain) —
// what waste_chat_tokenize gives for the text alone, with the blocks in front
// of it, as upstream's CLI puts them (vision.md §4).
std::vector<int32_t> user_turn_with_images(const Generator& g, const std::vector<int32_t>& blocks, const std::string& text) {
    const char *prefix = nullptr, *suffix = nullptr;
    waste_error error{};
    if (waste_chat_template_role(g.chat.get(), "user", &prefix, &suffix, &error) != WASTE_OK) fail_with(error, "the chat template");
    std::vector<int32_t> out = tokenize(g, prefix, WASTE_TOKENIZE_MARKUP);
    out.insert(out.end(), blocks.begin(), blocks.end());
    for (const auto& part : {tokenize(g, text, 0), tokenize(g, suffix, WASTE_TOKENIZE_MARKUP),
                             tokenize(g, waste_chat_template_open(g.chat.get()), WASTE_TOKENIZE_MARKUP)})
        out.insert(out.end(), part.begin(), part.end());
    return out;
}

namespace {

// The options given over `defaults`; a sampler made from them, so a bad
// option is a usage error.
waste_sampler* sampler_over(const GenerateArgs& args, waste_sampler_options options) {
    if (args.temperature) options.temperature = *args.temperature;
    if (args.top_k) options.top_k = *args.top_k;
    if (args.top_p) options.top_p = *args.top_p;
    if (args.min_p) options.min_p = *args.min_p;
    waste_error error{};
    waste_sampler* sampler = nullptr;
    if (waste_sampler_create(&options, &sampler, &error) != WASTE_OK) throw CLI::ValidationError("sampling", error.message);
    return sampler;
}

}  // namespace

Generator open_generator(const GenerateArgs& args, bool want_chat, bool json_output) {
    Generator g;
    waste_sampler_options greedy;
    waste_sampler_options_init(&greedy);
    waste_sampler_free(sampler_over(args, greedy));  // the options checked before the model loads
    for (const auto& stop : args.stops)
        if (stop.empty()) throw CLI::ValidationError("--stop", "a stop string cannot be empty");
    waste_error error{};

    waste_open_options options = model_open_options(args.context, args.threads, args.budget, args.verify, args.policy, args.stream);
    const bool constrained = !args.grammar_file.empty() || !args.schema_file.empty() || args.json_value;
    options.grammars = constrained ? 1 : 0;  // one grammar and its generation, in the memory plan
    options.vision = args.images.empty() && !args.vision ? 0 : 1;
    g.model = open_model(args.model, options);
    report_open(args.stream, g.model.get(), args.quiet || json_output);
    waste_sampler_options sampling;
    if (waste_model_sampling_defaults(g.model.get(), &sampling, nullptr, &error) != WASTE_OK) fail_with(error, "sampling defaults");
    const double temperature = args.temperature.value_or(sampling.temperature);
    if (temperature > 0) g.seed = args.seed ? *args.seed : std::random_device{}();
    sampling.seed = g.seed.value_or(args.seed.value_or(0));
    g.sampler.reset(sampler_over(args, sampling));
    waste_session* session = nullptr;
    if (waste_session_create(g.model.get(), &session, &error) != WASTE_OK) fail_with(error, "cannot start a session");
    g.session.reset(session);
    apply_session_options(args.stream, session);
    waste_tokenizer* tokenizer = nullptr;
    if (waste_model_tokenizer(g.model.get(), nullptr, &tokenizer, &error) == WASTE_OK) g.tokenizer.reset(tokenizer);
    else if (error.status != WASTE_ERR_UNSUPPORTED) fail_with(error, "cannot load the tokenizer of " + args.model);
    if (constrained) {
        if (!g.tokenizer) throw RuntimeFailure{"--grammar, --json-schema and --json-value need text, and this container has no tokenizer.model"};
        uint32_t kind = WASTE_GRAMMAR_JSON;
        std::string text;
        if (!args.grammar_file.empty()) {
            kind = WASTE_GRAMMAR_GBNF;
            text = read_input_file(args.grammar_file, max_grammar_file_bytes, "the grammar file");
        } else if (!args.schema_file.empty()) {
            kind = WASTE_GRAMMAR_JSON_SCHEMA;
            text = read_input_file(args.schema_file, max_grammar_file_bytes, "the JSON Schema file");
        }
        waste_grammar* grammar = nullptr;
        if (waste_grammar_compile(g.tokenizer.get(), kind, text.data(), text.size(), &grammar, &error) != WASTE_OK)
            fail_with(error, !args.grammar_file.empty() ? args.grammar_file : !args.schema_file.empty() ? args.schema_file : "--json-value");
        g.grammar.reset(grammar);
    }
    if (want_chat && !args.raw) {
        waste_chat_template* chat = nullptr;
        if (waste_model_chat_template(g.model.get(), &chat, &error) == WASTE_OK) g.chat.reset(chat);
        else if (error.status == WASTE_ERR_UNSUPPORTED) g.chat_missing = error.message;
        else fail_with(error, "cannot read the chat template");
    }
    return g;
}

std::vector<int32_t> tokenize(const Generator& g, const std::string& text, uint32_t flags) {
    if (!g.tokenizer)
        throw RuntimeFailure{"this container has no tokenizer.model, so it takes token ids only: use --ids \"1 2 3\""};
    int32_t* ids = nullptr;
    size_t count = 0;
    waste_error error{};
    if (waste_tokenizer_tokenize(g.tokenizer.get(), text.data(), text.size(), flags, &ids, &count, &error) != WASTE_OK)
        fail_with(error, "cannot tokenize the prompt");
    std::vector<int32_t> out(ids, ids + count);
    waste_tokens_free(ids);
    return out;
}

const char* stop_reason_name(uint32_t reason) {
    switch (reason) {
        case WASTE_STOP_LENGTH: return "length";
        case WASTE_STOP_EOS: return "eos";
        case WASTE_STOP_TOKEN: return "stop_token";
        case WASTE_STOP_STRING: return "stop_string";
        case WASTE_STOP_CALLBACK: return "interrupted";
        case WASTE_STOP_CONTEXT: return "context_full";
        case WASTE_STOP_GRAMMAR: return "grammar_complete";
        default: return "unknown";
    }
}

namespace {

struct Delta {
    uint64_t hits = 0, misses = 0, bytes = 0;
};

Delta stats_since(const GenerationOutput& out) {
    waste_session_stats now{};
    waste_session_stats_get(out.session, &now, nullptr);
    return Delta{now.expert_hits - out.start.expert_hits, now.expert_misses - out.start.expert_misses,
                 now.bytes_read - out.start.bytes_read};
}

void draw_status(GenerationOutput& out) {
    const auto now = std::chrono::steady_clock::now();
    if (now - out.last_status < std::chrono::milliseconds(100)) return;
    out.last_status = now;
    const double seconds = std::chrono::duration<double>(now - out.started).count();
    const Delta d = stats_since(out);
    const uint64_t lookups = d.hits + d.misses;
    fmt::print(stderr, "\r\033[K[{} tokens, {:.2f} tok/s | experts {:.1f}% hit | {:.1f} MB read]", out.tokens.size(),
               seconds > 0 ? out.tokens.size() / seconds : 0.0, lookups ? 100.0 * d.hits / lookups : 0.0, d.bytes / 1e6);
    std::fflush(stderr);
}

int on_step(const waste_generated* step, void* user) {
    auto& out = *static_cast<GenerationOutput*>(user);
    if (step->token >= 0) {
        out.tokens.push_back(step->token);
        out.logprobs.push_back(step->logprob);
    }
    out.text.append(step->text, step->text_length);
    if (out.print_text) {
        if (out.ids_only && step->token >= 0) fmt::print("{} ", step->token);
        else if (step->text_length) std::fwrite(step->text, 1, step->text_length, stdout);
        std::fflush(stdout);
    }
    if (out.status_line) draw_status(out);
    if (out.should_stop && out.should_stop()) {
        out.stop_requested_by_signal = true;
        return 1;
    }
    return 0;
}

}  // namespace

waste_generate_result generate(const Generator& g, const GenerateArgs& args, GenerationOutput& out,
                               const std::vector<int32_t>& extra_stop_tokens) {
    std::vector<const char*> stops;
    for (const auto& stop : args.stops) stops.push_back(stop.c_str());
    if (!g.tokenizer && !stops.empty())
        throw RuntimeFailure{"--stop needs text, and this container has no tokenizer.model"};
    waste_generate_options options;
    waste_generate_options_init(&options);
    options.max_tokens = static_cast<uint32_t>(args.tokens);
    options.flags = args.ignore_eos ? WASTE_GENERATE_IGNORE_EOS : 0;
    options.tokenizer = g.tokenizer.get();
    options.stop_strings = stops.data();
    options.stop_string_count = stops.size();
    options.stop_tokens = extra_stop_tokens.data();
    options.stop_token_count = extra_stop_tokens.size();
    options.grammar = g.grammar.get();
    out.ids_only = !g.tokenizer;
    out.seed = g.seed;
    out.session = g.session.get();
    waste_session_stats_get(out.session, &out.start, nullptr);
    out.started = out.last_status = std::chrono::steady_clock::now();
    waste_generate_result result{};
    waste_error error{};
    const waste_status status = waste_session_generate(g.session.get(), g.sampler.get(), &options, on_step, &out, &result, &error);
    if (out.status_line) {
        fmt::print(stderr, "\r\033[K");
        std::fflush(stderr);
    }
    if (status != WASTE_OK) {
        if (out.print_text) fmt::print("\n");
        fail_with(error, "generation failed");
    }
    return result;
}

std::string summary_line(const GenerationOutput& out, double seconds) {
    const Delta d = stats_since(out);
    const uint64_t lookups = d.hits + d.misses;
    return fmt::format("[{} tokens, {:.2f} s, {:.2f} tok/s | experts {} hit / {} miss = {:.1f}% | {:.2f} GB read{}]", out.tokens.size(),
                       seconds, out.tokens.size() > 1 && seconds > 0 ? (out.tokens.size() - 1) / seconds : 0.0, d.hits, d.misses,
                       lookups ? 100.0 * d.hits / lookups : 0.0, d.bytes / 1e9, out.seed ? fmt::format(" | seed {}", *out.seed) : "");
}

}  // namespace waste_cli
