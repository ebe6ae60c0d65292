// child_process.h — runs a command as a child process and reports how it
// ended, its peak resident memory and its output; optionally with stdin from
// a string and inside a cgroup (tests/memory_cgroup.h). Not for commands
// whose output is the point of a shell pipeline: test_support's run_command.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace waste_test {

struct ChildOptions {
    std::string cgroup_procs;  // a cgroup.procs file the child joins before its exec; "" = stay
    std::string stdin_text;    // what the child reads on stdin (empty: /dev/null)
    std::string pid_path;      // a file the child's pid is written to once it runs ("" = none): to signal it
};

struct ChildRun {
    int exit_code = -1;     // the exit status when it exited, else -1
    int signal = 0;         // the signal that ended it (9 is also the OOM killer's), else 0
    uint64_t peak_rss = 0;  // ru_maxrss in bytes (VmHWM)
    std::string output;     // stdout and stderr, interleaved
    bool exited_ok() const { return signal == 0 && exit_code == 0; }
    std::string describe() const;  // "exit 0" / "killed by signal 9", then the output
};

// The child is forked by a small python3 process, which joins the cgroup in
// the child after the fork and then execs argv: ru_maxrss also counts the
// memory of the process a child was forked from up to its exec, and a test
// process is far larger than the engine under test (python's ~10 MB is not),
// and the pages python touched before the fork stay charged to the cgroup
// it came from.
ChildRun run_child(const std::vector<std::string>& argv, const ChildOptions& options = {});

}  // namespace waste_test
