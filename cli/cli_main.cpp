// cli_main.cpp — parsing and the exit codes shared by every waste executable.
#include "cli_main.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <vector>

#if defined(_WIN32)
#include <windows.h>
// after windows.h, which it needs
#include <fcntl.h>
#include <io.h>
#include <shellapi.h>
#endif

#include <fmt/format.h>

#include "cli_common.h"

namespace waste_cli {
namespace {

#if defined(_WIN32)
// Windows hands main() its arguments in the ANSI code page and opens the
// standard streams in text mode (every "\n" written becomes "\r\n"). So the
// arguments are taken again as UTF-16 and made UTF-8, the text the library
// and every other system use, and the streams are made binary: what the
// CLI writes (JSON lines, token streams, bytes piped on) is byte for byte
// what it writes elsewhere. A console shows that UTF-8 as UTF-8.
std::vector<std::string> utf8_arguments() {
    int count = 0;
    wchar_t** wide = ::CommandLineToArgvW(::GetCommandLineW(), &count);
    std::vector<std::string> arguments;
    for (int i = 0; wide && i < count; ++i) {
        const int length = static_cast<int>(std::wcslen(wide[i]));
        const int bytes = ::WideCharToMultiByte(CP_UTF8, 0, wide[i], length, nullptr, 0, nullptr, nullptr);
        std::string argument(static_cast<size_t>(std::max(bytes, 0)), '\0');
        if (bytes > 0) ::WideCharToMultiByte(CP_UTF8, 0, wide[i], length, argument.data(), bytes, nullptr, nullptr);
        arguments.push_back(std::move(argument));
    }
    if (wide) ::LocalFree(wide);
    return arguments;
}

void use_binary_utf8_streams() {
    _setmode(_fileno(stdin), _O_BINARY);
    _setmode(_fileno(stdout), _O_BINARY);
    _setmode(_fileno(stderr), _O_BINARY);
    ::SetConsoleOutputCP(CP_UTF8);
    ::SetConsoleCP(CP_UTF8);
}
#endif

// CLI11 reads "/name" as an option on Windows (allow_windows_style_options);
// the CLI's options are "--name" everywhere, and "/tmp/x" is a path.
void only_dash_options(CLI::App& app) {
    app.allow_windows_style_options(false);
    for (CLI::App* command : app.get_subcommands([](CLI::App*) { return true; })) only_dash_options(*command);
}

// What parsing and running the command gave, before standard output is
// finished (finish_output).
int parse_and_run(CLI::App& app, int argc, char** argv) {
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

// Standard output is flushed here, before main returns, not left to the C
// runtime's exit: under Wine that last flush was sometimes lost while the
// process was torn down, and a command exited 0 with the tail of its output
// missing (an empty stdout, or JSON cut at a 4 KiB boundary). Output that
// could not be written (a full disk, a closed pipe) is a failure, never a
// result: exit 1 with the reason, unless the command had failed already.
int finish_output(int code) {
    errno = 0;
    const bool failed = std::fflush(stdout) != 0 || std::ferror(stdout);
    if (!failed || code != 0) return code;
    const int error = errno;
    fmt::print(stderr, "waste: writing the standard output failed: {}\n",
               error ? std::strerror(error) : "an earlier write to it was refused");
    return exit_runtime_error;
}

}  // namespace

int run_command_line(CLI::App& app, int argc, char** argv, const char* implied_subcommand) {
    std::vector<char*> words(argv, argv + argc);
#if defined(_WIN32)
    use_binary_utf8_streams();
    std::vector<std::string> arguments = utf8_arguments();
    if (!arguments.empty()) {
        words.clear();
        for (std::string& argument : arguments) words.push_back(argument.data());
    }
#endif
    std::string subcommand = implied_subcommand ? implied_subcommand : "";
    if (implied_subcommand && !words.empty()) words.insert(words.begin() + 1, subcommand.data());
    words.push_back(nullptr);
    only_dash_options(app);
    return finish_output(parse_and_run(app, static_cast<int>(words.size()) - 1, words.data()));
}

}  // namespace waste_cli
