// cli_main.cpp — parsing and the exit codes shared by every waste executable.
#include "cli_main.h"

#include <cstdio>
#include <exception>
#include <new>

#include <fmt/format.h>

#include "cli_common.h"

namespace waste_cli {

int run_command_line(CLI::App& app, int argc, char** argv) {
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
        return exit_usage_error;
    } catch (const RuntimeFailure& failure) {
        std::fflush(stdout);
        fmt::print(stderr, "waste: {}\n", failure.message);
        return exit_runtime_error;
    } catch (const std::bad_alloc&) {
        std::fflush(stdout);
        fmt::print(stderr, "waste: out of memory\n");
        return exit_runtime_error;
    } catch (const std::exception& e) {
        // Incident: a directory given as --file threw std::ios_base::failure
        // out of main, and the process died with SIGABRT instead of exit 1.
        std::fflush(stdout);
        fmt::print(stderr, "waste: {}\n", e.what());
        return exit_runtime_error;
    } catch (...) {
        std::fflush(stdout);
        fmt::print(stderr, "waste: an unexpected error\n");
        return exit_runtime_error;
    }
    return 0;
}

}  // namespace waste_cli
