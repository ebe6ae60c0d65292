// main.cpp — the `waste` command line: one subcommand per job (exit codes:
// cli_main.h).
#include <fmt/format.h>

#include "cli_common.h"
#include "cli_main.h"

namespace waste_cli {
// `waste serve` runs the waste-serve executable (cmd_serve.cpp); declared
// here so cli_common.h, which every command includes, stays as it is.
void add_serve_forwarding_command(CLI::App& app);
}  // namespace waste_cli

int main(int argc, char** argv) {
    CLI::App app{"waste — Weight-Aware Streaming Tensor Engine: runs large mixture-of-experts models from disk"};
    app.require_subcommand(1);
    app.set_version_flag("--version", std::string("waste ") + waste_version());
    // Global options may follow the subcommand too (`waste run M --cpus 0-1`).
    app.fallthrough();
    waste_cli::add_cpus_option(app);
    app.add_subcommand("version", "Print the version")->callback([] { fmt::print("waste {}\n", waste_version()); });
    waste_cli::add_model_commands(app);
    waste_cli::add_synth_command(app);
    waste_cli::add_run_commands(app);
    waste_cli::add_perplexity_command(app);
    waste_cli::add_generate_commands(app);
    waste_cli::add_bench_command(app);
    waste_cli::add_bench_reuse_command(app);
    waste_cli::add_simulate_command(app);
    waste_cli::add_tokenize_commands(app);
    waste_cli::add_diskbench_command(app);
    waste_cli::add_convert_command(app);
    waste_cli::add_render_command(app);
    waste_cli::add_serve_forwarding_command(app);
    return waste_cli::run_command_line(app, argc, argv);
}
