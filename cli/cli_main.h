// cli_main.h — the one way a `waste` executable parses its command line and
// turns what escapes a command into an exit code and a message (main.cpp for
// `waste`, serve/serve_main.cpp for `waste-serve`).
#pragma once

#include <CLI/CLI.hpp>

namespace waste_cli {

// Parses argv with app and runs the chosen command. Exit codes: 0 success;
// 1 a runtime error (the message on stderr says what failed and what to do;
// every exception that reaches here is one, and so is standard output that
// could not be written); 2 a usage error (with the usage
// line of the command that was being parsed). implied_subcommand, when
// given, is parsed as if it followed the program's name (waste-serve's
// arguments are read as `waste serve ARGS`).
int run_command_line(CLI::App& app, int argc, char** argv, const char* implied_subcommand = nullptr);

}  // namespace waste_cli
