// generate_support.h — what `waste run` and `waste chat` share: their
// options, opening the model with a session, tokenizer and sampler, the
// streaming printer with its status and summary lines.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli_common.h"
#include "stream_options.h"
#include "waste/waste.h"

namespace waste_cli {

struct GenerateArgs {
    std::string model;
    std::string budget;
    uint32_t context = 4096;
    unsigned threads = 0;
    bool verify = false;
    std::string policy = "default";
    StreamArgs stream;
    int tokens = 256;
    // Sampled by default, as llama.cpp does (greedy decoding loops on small
    // models: "and the LORD thy God, and the LORD thy God, ..."); --temp 0 is
    // greedy. None given: the model's (waste_model_sampling_defaults: its
    // release's generation_config.json, else temperature 0.8, top-p 0.95).
    std::optional<double> temperature;
    std::optional<uint32_t> top_k;
    std::optional<double> top_p;
    std::optional<double> min_p;
    std::optional<uint64_t> seed;  // none: a fresh one, reported
    std::vector<std::string> stops;
    std::string system;
    bool raw = false;
    bool ignore_eos = false;
    bool quiet = false;
    // Constrained decoding (docs/GRAMMAR.md): at most one of these.
    std::string grammar_file;  // --grammar FILE.gbnf
    std::string schema_file;   // --json-schema FILE.json
    bool json_value = false;   // --json-value: any JSON value
    std::vector<std::string> images;  // --image FILE (run; chat: with the first message): opens the vision tower
    bool vision = false;              // --vision (chat): open the tower for /image
};

// The options both commands take (each lists its own default in --help).
void add_generate_options(CLI::App* command, GenerateArgs& args, int default_tokens);

struct SamplerCloser {
    void operator()(waste_sampler* sampler) const { waste_sampler_free(sampler); }
};
struct GrammarCloser {
    void operator()(waste_grammar* grammar) const { waste_grammar_free(grammar); }
};
struct ChatCloser {
    void operator()(waste_chat_template* chat) const { waste_chat_template_free(chat); }
};

struct Generator {
    ModelHandle model;
    SessionHandle session;
    TokenizerHandle tokenizer;  // null: the container has none
    std::unique_ptr<waste_sampler, SamplerCloser> sampler;
    std::unique_ptr<waste_chat_template, ChatCloser> chat;        // null: none, or --raw
    std::string chat_missing;                                     // why chat is null, when not --raw
    std::optional<uint64_t> seed;  // the sampler's seed when it samples (temperature > 0), to report
    std::unique_ptr<waste_grammar, GrammarCloser> grammar;        // null: unconstrained
};

// Opens everything; a bad sampling option is a usage error (CLI::ValidationError).
// The start line (report_open) goes to stderr unless -q or json_output.
Generator open_generator(const GenerateArgs& args, bool want_chat, bool json_output = false);

std::vector<int32_t> tokenize(const Generator& g, const std::string& text, uint32_t flags);

// The user turn with images (g.chat required): the template's user prefix,
// the images' media blocks (markup, image_prompt.h), the text (plain), the
// user suffix and the answer opener — what waste_chat_tokenize gives for the
// text alone, with the blocks in front of it, where upstream's CLI puts them
// (vision.md §4). The pads are not expanded yet.
std::vector<int32_t> user_turn_with_images(const Generator& g, const std::vector<int32_t>& blocks, const std::string& text);

// Prints a generation as it streams: text (or ids when there is no
// tokenizer) on stdout; on a terminal, a status line on stderr.
struct GenerationOutput {
    bool print_text = true;
    bool status_line = false;
    bool ids_only = false;   // no tokenizer: print ids
    bool stop_requested_by_signal = false;
    std::vector<int32_t> tokens;
    std::vector<float> logprobs;
    std::string text;
    waste_session* session = nullptr;
    waste_session_stats start{};
    std::chrono::steady_clock::time_point started;
    std::chrono::steady_clock::time_point last_status;
    int (*should_stop)() = nullptr;  // polled per token (Ctrl-C in chat)
    std::optional<uint64_t> seed;    // shown in the summary line when sampled
};

// Runs waste_session_generate with args' stops and limits.
waste_generate_result generate(const Generator& g, const GenerateArgs& args, GenerationOutput& out,
                               const std::vector<int32_t>& extra_stop_tokens = {});

// "[N tokens, S s, T tok/s | experts H hit / M miss = P% | X GB read]", then
// " | seed S" when sampled (the seed repeats the run).
std::string summary_line(const GenerationOutput& out, double seconds);
const char* stop_reason_name(uint32_t reason);

void add_chat_command(CLI::App& app);  // cmd_chat.cpp

}  // namespace waste_cli
