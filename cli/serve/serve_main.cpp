// serve_main.cpp — the waste-serve executable: `waste serve` (cli/cmd_serve.cpp)
// execs it with the arguments after `serve`; run directly it takes the same
// arguments (waste-serve MODEL --port 8080 ...). Its own executable so the
// HTTP library's dependencies are mapped into the server alone.
#include <string>

#include "cli_common.h"
#include "cli_main.h"

namespace waste_cli {
void add_serve_command(CLI::App& app);  // serve_command.cpp
}  // namespace waste_cli

int main(int argc, char** argv) {
    CLI::App app{"waste serve — the OpenAI-compatible HTTP server of waste"};
    app.require_subcommand(1);
    app.set_version_flag("--version", std::string("waste ") + waste_version());
    app.fallthrough();
    waste_cli::add_cpus_option(app);
    waste_cli::add_serve_command(app);
    // Parsed as `waste serve ARGS`, so usage lines and messages read as the
    // command the user typed.
    return waste_cli::run_command_line(app, argc, argv, "serve");
}
