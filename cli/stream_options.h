// stream_options.h — the options shared by the commands that run a model
// (run, eval, generate, chat, perplexity, bench, serve): --io, --lookahead,
// --lookahead-layers,
// --mlock, --learn/--usage/--no-hotlist, --dump-route, --lut (the
// arithmetic) and --chunk (the prefill chunk the plan holds). Each command
// keeps a StreamArgs, registers the options, and applies them to the open
// options and the session.
#pragma once

#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

#include "waste/waste.h"

namespace waste_cli {

struct StreamArgs {
    std::string io = "auto";
    uint32_t lookahead = 6;
    uint32_t lookahead_layers = 1;
    bool mlock = false;
    bool learn = false;
    bool no_hotlist = false;
    std::string usage;        // empty: usage.waste in the container
    std::string dump_route;   // empty: none
    std::string lut = "int8";  // the arithmetic: int8 (the CLI's default) or exact (f32)
    uint32_t prefill_chunk = 0;  // 0: the plan's choice
};

void add_stream_options(CLI::App* command, StreamArgs& args);
// --chunk / --prefill-chunk (waste_open_options.prefill_chunk), for commands
// that plan without the streaming options (plan).
void add_prefill_chunk_option(CLI::App* command, uint32_t& tokens);
// Sets io_backend, the mlock/no-hotlist flags and usage_path (which points
// into args: keep args alive until the open returns).
void apply_open_options(const StreamArgs& args, waste_open_options& options);
// The open options every command that runs a model shares: --ctx,
// --threads, --budget, --verify, --policy, then apply_open_options.
waste_open_options model_open_options(uint32_t context, unsigned threads, const std::string& budget, bool verify,
                                      const std::string& policy, const StreamArgs& stream);
// Why a budget is what it is, in words: `covers` is `waste plan --json`'s
// recommended_covers or info's budget_covers ("requested" for --budget).
std::string budget_reason(const std::string& covers, uint64_t spare_bytes, uint64_t everything_bytes);
// After the open, on stderr: the start line (the budget and why: --budget, or
// what the default covers) unless quiet, and a warning when --mlock was
// refused.
void report_open(const StreamArgs& args, waste_model* model, bool quiet);
// Lookahead and the route dump on a new session.
void apply_session_options(const StreamArgs& args, waste_session* session);
// At the end of a command: the route dump is published (a failed write is
// reported here, not lost at exit), and --learn writes the hotlist.
void finish_stream(const StreamArgs& args, waste_model* model, waste_session* session);

}  // namespace waste_cli
