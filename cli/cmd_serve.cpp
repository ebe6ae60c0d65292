// cmd_serve.cpp — `waste serve ...` replaces this process with the
// waste-serve executable beside it (cli/serve/), passing every argument on.
//
// Why a second executable: the HTTP library (Debian's libcpp-httplib) links
// OpenSSL, brotli and zlib, about 4 MB of resident memory at start-up. Linked
// into `waste`, every command paid it outside its memory plan (the soak's
// `waste chat` went 2 MB over its budget); now only the server does. The
// CPU affinity set by a --cpus given before `serve` survives the exec.
//
// Windows has no exec that keeps the process: there waste-serve.exe is run
// as a child, waited for, and its exit code is this one's (the affinity is
// inherited the same way). A Ctrl-C or Ctrl-Break reaches both processes of
// the console: this one leaves it to the server (which stops, then exits)
// instead of ending at once and orphaning it. And both share a job object
// that ends its processes when its last handle closes: killed (a service
// manager's TerminateProcess, Task Manager), this one takes the server
// with it, as the exec'd server is itself killed on POSIX.
#if defined(_WIN32)
#include <process.h>
#include <windows.h>
#else
#include <unistd.h>
#endif
#if defined(__APPLE__)
#include <mach-o/dyld.h>
#endif

#include <cerrno>
#include <cstdlib>
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
#if defined(_WIN32)
std::filesystem::path server_executable() {
    std::wstring self(32768, L'\0');
    const DWORD length = ::GetModuleFileNameW(nullptr, self.data(), static_cast<DWORD>(self.size()));
    if (length == 0 || length >= self.size())
        throw RuntimeFailure{fmt::format("serve: cannot find this executable's directory (GetModuleFileNameW: error {})", ::GetLastError())};
    self.resize(length);
    return std::filesystem::path(self).parent_path() / L"waste-serve.exe";
}

BOOL WINAPI leave_stop_to_server(DWORD event) { return event == CTRL_C_EVENT || event == CTRL_BREAK_EVENT; }

// Puts this process (and so every child it starts) in a new job that is
// ended when its one handle, held by this process alone, closes. Best
// effort: where jobs cannot be made, the server runs as before.
void end_children_with_this_process() {
    const HANDLE job = ::CreateJobObjectW(nullptr, nullptr);
    if (!job) return;
    JOBOBJECT_EXTENDED_LIMIT_INFORMATION limits{};
    limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
    if (!::SetInformationJobObject(job, JobObjectExtendedLimitInformation, &limits, sizeof limits) ||
        !::AssignProcessToJobObject(job, ::GetCurrentProcess()))
        ::CloseHandle(job);
}

// Runs the server as a child and ends with its exit code.
[[noreturn]] void run_server(const std::filesystem::path& server, const std::vector<std::string>& arguments) {
    // _wspawnv joins the arguments into one command line without quoting them.
    auto quoted = [](const std::wstring& argument) {
        std::wstring out = L"\"";
        size_t backslashes = 0;
        for (wchar_t c : argument) {
            if (c == L'\\') {
                ++backslashes;
                continue;
            }
            out.append(c == L'"' ? 2 * backslashes + 1 : backslashes, L'\\');
            backslashes = 0;
            out.push_back(c);
        }
        out.append(2 * backslashes, L'\\');
        return out + L"\"";
    };
    std::vector<std::wstring> words{quoted(server.wstring())};
    for (const std::string& argument : arguments) words.push_back(quoted(path_from_utf8(argument).wstring()));
    std::vector<const wchar_t*> argv;
    for (const std::wstring& word : words) argv.push_back(word.c_str());
    argv.push_back(nullptr);
    std::fflush(stdout);
    ::SetConsoleCtrlHandler(leave_stop_to_server, TRUE);
    end_children_with_this_process();
    const intptr_t code = ::_wspawnv(_P_WAIT, server.wstring().c_str(), argv.data());
    if (code == -1)
        throw RuntimeFailure{fmt::format("serve: cannot run {}: {} (it is built beside waste; reinstall or rebuild)",
                                         utf8_from_path(server), std::strerror(errno))};
    std::exit(static_cast<int>(code));
}
#elif defined(__APPLE__)
std::filesystem::path server_executable() {
    uint32_t size = 0;
    _NSGetExecutablePath(nullptr, &size);  // asks for the size
    std::string self(size, '\0');
    if (_NSGetExecutablePath(self.data(), &size) != 0)
        throw RuntimeFailure{"serve: cannot find this executable's directory (_NSGetExecutablePath failed)"};
    self.resize(std::strlen(self.c_str()));
    return std::filesystem::path(self).parent_path() / "waste-serve";
}
#else
std::filesystem::path server_executable() {
    std::error_code error;
    const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
    if (error) throw RuntimeFailure{fmt::format("serve: cannot find this executable's directory (/proc/self/exe: {})", error.message())};
    return self.parent_path() / "waste-serve";
}
#endif

#if !defined(_WIN32)

// Replaces this process with the server.
[[noreturn]] void run_server(const std::filesystem::path& server_path, const std::vector<std::string>& arguments) {
    const std::string server = utf8_from_path(server_path);
    std::vector<std::string> args{server};
    args.insert(args.end(), arguments.begin(), arguments.end());
    std::vector<char*> argv;
    for (std::string& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    std::fflush(stdout);
    execv(server.c_str(), argv.data());
    throw RuntimeFailure{fmt::format("serve: cannot run {}: {} (it is built beside waste; reinstall or rebuild)", server,
                                     std::strerror(errno))};
}
#endif

}  // namespace

void add_serve_forwarding_command(CLI::App& app) {
    CLI::App* cmd = app.add_subcommand("serve", "Serve the model over an OpenAI-compatible HTTP API (docs/SERVE.md; waste serve --help)");
    // Everything after `serve`, --help included, is the server's to parse.
    cmd->set_help_flag();
    cmd->fallthrough(false);
    cmd->allow_extras();
    cmd->prefix_command();
    cmd->callback([cmd] { run_server(server_executable(), cmd->remaining()); });
}

}  // namespace waste_cli
