#include "child_process.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <filesystem>
#include <sstream>

#include "test_support.h"

extern char** environ;

namespace waste_test {

namespace fs = std::filesystem;

std::string ChildRun::describe() const {
    std::ostringstream text;
    if (signal) text << "killed by signal " << signal;
    else text << "exit " << exit_code;
    text << "\n" << output;
    return text.str();
}

ChildRun run_child(const std::vector<std::string>& argv, const ChildOptions& options) {
    TempDir dir;
    const std::string out_path = (dir.path() / "out").string();
    const std::string in_path = (dir.path() / "in").string();
    const std::string result_path = (dir.path() / "result").string();
    write_file(in_path, options.stdin_text);
    // argv[1]: cgroup.procs or "", argv[2]: where the peak and wait status
    // go, argv[3]: where the child's pid goes or ""
    const char* wrapper =
        "import os, sys\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    if sys.argv[1]:\n"
        "        with open(sys.argv[1], 'w') as procs:\n"
        "            procs.write(str(os.getpid()))\n"
        "    os.execv(sys.argv[4], sys.argv[4:])\n"
        "if sys.argv[3]:\n"
        "    open(sys.argv[3] + '.part', 'w').write(str(pid))\n"
        "    os.rename(sys.argv[3] + '.part', sys.argv[3])\n"
        "_, status, usage = os.wait4(pid, 0)\n"
        "open(sys.argv[2], 'w').write(f'{usage.ru_maxrss * 1024} {status}')\n";
    std::vector<std::string> full = {"/usr/bin/python3", "-c", wrapper, options.cgroup_procs, result_path, options.pid_path};
    full.insert(full.end(), argv.begin(), argv.end());
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, in_path.c_str(), O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    std::vector<char*> args;
    for (const std::string& a : full) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ChildRun run;
    pid_t pid = 0;
    const int spawned = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (spawned != 0) {
        run.output = "cannot start /usr/bin/python3";
        return run;
    }
    int wrapper_status = 0;
    waitpid(pid, &wrapper_status, 0);
    run.output = read_file(out_path);
    if (!fs::exists(result_path)) {
        run.output += "\n(the python3 wrapper failed before the child ended)";
        return run;
    }
    std::istringstream result(read_file(result_path));
    int status = 0;
    result >> run.peak_rss >> status;
    if (WIFEXITED(status)) run.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) run.signal = WTERMSIG(status);
    return run;
}

}  // namespace waste_test
