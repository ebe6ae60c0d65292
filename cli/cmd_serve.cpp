// cmd_serve.cpp — `waste serve ...` replaces this process with the
// waste-serve executable beside it (cli/serve/), passing every argument on.
//
// Why a second executable: the HTTP library (Debian's libcpp-httplib) links
// OpenSSL, brotli and zlib, about 4 MB of resident memory at start-up. Linked
// into `waste`, every command paid it outside its memory plan (the soak's
// `waste chat` went 2 MB over its budget); now only the server does. The
// CPU affinity set by a --cpus given before `serve` survives the exec.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli_common.h"

namespace waste_cli {

namespace {

// waste-serve in the directory of the running executable (the build folder,
// or where both are installed), never a lookup on $PATH: a `waste serve`
// must run the server of the same build.
std::string server_executable() {
    std::error_code error;
    const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
    if (error) throw RuntimeFailure{fmt::format("serve: cannot find this executable's directory (/proc/self/exe: {})", error.message())};
    return (self.parent_path() / "waste-serve").string();
}

}  // namespace

void add_serve_forwarding_command(CLI::App& app) {
    CLI::App* cmd = app.add_subcommand("serve", "Serve the model over an OpenAI-compatible HTTP API (docs/SERVE.md; waste serve --help)");
    // Everything after `serve`, --help included, is the server's to parse.
    cmd->set_help_flag();
    cmd->fallthrough(false);
    cmd->allow_extras();
    cmd->prefix_command();
    cmd->callback([cmd] {
        const std::string server = server_executable();
        std::vector<std::string> args{server};
        for (const std::string& arg : cmd->remaining()) args.push_back(arg);
        std::vector<char*> argv;
        for (std::string& arg : args) argv.push_back(arg.data());
        argv.push_back(nullptr);
        std::fflush(stdout);
        execv(server.c_str(), argv.data());
        throw RuntimeFailure{fmt::format("serve: cannot run {}: {} (it is built beside waste; reinstall or rebuild)", server,
                                         std::strerror(errno))};
    });
}

}  // namespace waste_cli
