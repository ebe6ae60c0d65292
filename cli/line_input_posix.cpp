// line_input_posix.cpp — line_input.h on Linux and macOS. The SIGINT
// handler sets a flag and writes a byte to a pipe that the line reader polls
// beside stdin (the self-pipe trick): a Ctrl-C that lands between printing
// the prompt and blocking in read() — which an EINTR-based reader missed,
// hanging until the next key — still wakes it.
#include "line_input.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "cli_common.h"

namespace waste_cli {
namespace {

std::atomic<bool> interrupted{false};
int interrupt_pipe[2] = {-1, -1};  // [0] polled by read_line, [1] written by the handler

extern "C" void on_sigint(int) {
    const int saved = errno;
    interrupted.store(true);
    const char byte = 1;
    if (interrupt_pipe[1] >= 0) (void)!::write(interrupt_pipe[1], &byte, 1);  // full pipe: a wake-up is pending anyway
    errno = saved;
}

void drain_interrupt_pipe() {
    char bytes[64];
    while (interrupt_pipe[0] >= 0 && ::read(interrupt_pipe[0], bytes, sizeof bytes) > 0) {
    }
}

}  // namespace

int interrupt_requested() { return interrupted.load() ? 1 : 0; }

// Forgets a Ctrl-C already acted on (an answer it stopped): the flag, then
// the pipe's wake-ups (in this order: a Ctrl-C in between keeps its flag,
// which read_line checks before it waits).
void clear_interrupt() {
    interrupted.store(false);
    drain_interrupt_pipe();
}

void install_interrupt_handler() {
    // pipe() and fcntl rather than Linux's pipe2: macOS has no pipe2.
    if (interrupt_pipe[0] < 0) {
        if (::pipe(interrupt_pipe) != 0)
            throw RuntimeFailure{fmt::format("chat: cannot create the interrupt pipe: {}", std::strerror(errno))};
        for (int end : interrupt_pipe) {
            ::fcntl(end, F_SETFD, FD_CLOEXEC);
            ::fcntl(end, F_SETFL, ::fcntl(end, F_GETFL) | O_NONBLOCK);
        }
    }
    struct sigaction action {};
    action.sa_handler = on_sigint;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;  // the reader wakes through the pipe, not through EINTR
    sigaction(SIGINT, &action, nullptr);
}

// One line from stdin without its newline. Ctrl-C while typing discards the line.
LineResult read_line(std::string& line) {
    line.clear();
    for (;;) {
        // A Ctrl-C whose pipe byte a clear_interrupt() drained still has its flag.
        if (interrupted.load()) {
            clear_interrupt();
            return LineResult::interrupted;
        }
        pollfd fds[2] = {{STDIN_FILENO, POLLIN, 0}, {interrupt_pipe[0], POLLIN, 0}};
        if (::poll(fds, 2, -1) < 0) {
            if (errno == EINTR) continue;
            return line.empty() ? LineResult::end : LineResult::line;
        }
        if (fds[1].revents & POLLIN) {
            drain_interrupt_pipe();  // the flag, checked above, says whether it was a Ctrl-C
            continue;
        }
        if (!(fds[0].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        char c = 0;
        const ssize_t got = ::read(STDIN_FILENO, &c, 1);
        if (got == 1) {
            if (c == '\n') return LineResult::line;
            line.push_back(c);
            continue;
        }
        if (got < 0 && errno == EINTR) continue;
        return line.empty() ? LineResult::end : LineResult::line;  // EOF (Ctrl-D) or a read error
    }
}

}  // namespace waste_cli
