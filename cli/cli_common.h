// cli_common.h — what every `waste` subcommand shares: the model handle
// wrapper, size parsing ("8G", "512M"), and the runtime-error exit.
//
// The CLI is a client of include/waste/waste.h only.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "waste/waste.h"

namespace waste_cli {

constexpr int exit_runtime_error = 1;
constexpr int exit_usage_error = 2;

// Thrown by a command to end with exit 1 and a message on stderr.
struct RuntimeFailure {
    std::string message;
};

[[noreturn]] void fail_with(const waste_error& error, const std::string& doing);

// A path from the command line's UTF-8 text: built from a std::string, a
// path would be read in the ANSI code page on Windows.
inline std::filesystem::path path_from_utf8(const std::string& text) {
    return std::filesystem::path(std::u8string(reinterpret_cast<const char8_t*>(text.data()), text.size()));
}

// The inverse: a path's UTF-8 text (path::string() is ANSI on Windows).
inline std::string utf8_from_path(const std::filesystem::path& path) {
    const std::u8string text = path.u8string();
    return std::string(reinterpret_cast<const char*>(text.data()), text.size());
}

struct ModelCloser {
    void operator()(waste_model* model) const { waste_model_close(model); }
};
using ModelHandle = std::unique_ptr<waste_model, ModelCloser>;
struct SessionCloser {
    void operator()(waste_session* session) const { waste_session_free(session); }
};
using SessionHandle = std::unique_ptr<waste_session, SessionCloser>;
struct TokenizerCloser {
    void operator()(waste_tokenizer* tokenizer) const { waste_tokenizer_free(tokenizer); }
};
using TokenizerHandle = std::unique_ptr<waste_tokenizer, TokenizerCloser>;

ModelHandle open_model(const std::string& path, const waste_open_options& options);

// "1073741824", "8G", "8GB", "512M", "1.5GiB" -> bytes; throws CLI::ValidationError.
uint64_t parse_size(const std::string& text);
std::string format_bytes(uint64_t bytes);
// The middle value (the mean of the middle two when even); 0 when empty.
double median(std::vector<double> values);
// The argmax of the session's next-token logits (greedy); a failure exits 1.
int32_t greedy_token(const waste_session* session);

// Takes a JSON string the library returned and frees it.
std::string take_string(char* json);

// `--cpus LIST` ("0-3,6"): pins the process, and so every compute and I/O
// thread the library starts, to those CPUs before the command runs; with
// --threads 0 the library then starts one thread per pinned CPU.
void add_cpus_option(CLI::App& app);
// `--threads N` (0 = one per core), at most WASTE_MAX_THREADS (waste.h says
// why): more is a usage error. `what` is its help text.
CLI::Option* add_threads_option(CLI::App* command, unsigned& threads, const std::string& name = "--threads",
                                const std::string& what = "Compute threads (0 = one per core)");
// "1 2 3", "1,2,3" or "[1, 2, 3]" -> token ids (non-negative, < 2^31);
// throws CLI::ValidationError naming the bad item (or an empty list, unless
// allow_empty) and where the text came from (`source`: an option or a file).
std::vector<int32_t> parse_token_ids(const std::string& text, bool allow_empty = false, const std::string& source = "--ids");
// "0-3,6" -> sorted CPU numbers; throws CLI::ValidationError.
std::vector<int> parse_cpu_list(const std::string& text);

// Registration of each command group (cmd_*.cpp).
void add_model_commands(CLI::App& app);
void add_synth_command(CLI::App& app);
void add_run_commands(CLI::App& app);       // eval
void add_perplexity_command(CLI::App& app);
void add_generate_commands(CLI::App& app);  // run, chat
void add_bench_command(CLI::App& app);
void add_bench_reuse_command(CLI::App& app);
void add_simulate_command(CLI::App& app);
void add_tokenize_commands(CLI::App& app);
void add_diskbench_command(CLI::App& app);
void add_convert_command(CLI::App& app);
void add_render_command(CLI::App& app);     // render (chat requests)

// `waste verify MODEL --source SRC` (cmd_convert.cpp); throws RuntimeFailure when a check fails.
void verify_against_source(const std::string& model, const std::string& source, double max_error, bool json_output);

}  // namespace waste_cli
