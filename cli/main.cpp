// main.cpp — the `waste` command line: one subcommand per job.
//
// Exit codes: 0 success; 1 a runtime error (message on stderr says what
// failed and what to do; every exception that reaches main is one); 2 a
// usage error (with the usage line).
#include <cstdio>
#include <exception>
#include <new>

#include <fmt/format.h>

#include "cli_common.h"

namespace waste_cli {
// `waste serve` (cmd_serve.cpp); declared here so cli_common.h, which every
// command includes, stays as it is.
void add_serve_command(CLI::App& app);
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
    waste_cli::add_serve_command(app);
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        app.exit(e);
        // The usage line of the command that was being parsed (or of waste).
        const CLI::App* command = &app;
        for (const CLI::App* sub : app.get_subcommands()) command = sub;
        if (const auto formatter = std::dynamic_pointer_cast<CLI::Formatter>(app.get_formatter()))
            fmt::print(stderr, "{}", formatter->make_usage(command, command == &app ? "waste" : "waste " + command->get_name()));
        return waste_cli::exit_usage_error;
    } catch (const waste_cli::RuntimeFailure& failure) {
        std::fflush(stdout);
        fmt::print(stderr, "waste: {}\n", failure.message);
        return waste_cli::exit_runtime_error;
    } catch (const std::bad_alloc&) {
        std::fflush(stdout);
        fmt::print(stderr, "waste: out of memory\n");
        return waste_cli::exit_runtime_error;
    } catch (const std::exception& e) {
        // Incident: a directory given as --file threw std::ios_base::failure
        // out of main, and the process died with SIGABRT instead of exit 1.
        std::fflush(stdout);
        fmt::print(stderr, "waste: {}\n", e.what());
        return waste_cli::exit_runtime_error;
    } catch (...) {
        std::fflush(stdout);
        fmt::print(stderr, "waste: an unexpected error\n");
        return waste_cli::exit_runtime_error;
    }
    return 0;
}
