// line_input_windows.cpp — line_input.h on Windows.
//
// Ctrl-C reaches a console program as a control event, handled on a thread
// the system starts: the handler sets a flag and returns TRUE (handled, the
// process lives on). A read from the console that Ctrl-C interrupts ends
// with ERROR_OPERATION_ABORTED, or with nothing read; the flag then says it
// was Ctrl-C and the line is discarded. Lines end in "\r\n" on a console,
// in either on a pipe; the "\r" is dropped.
#include "line_input.h"

#include <windows.h>

#include <atomic>

#include "cli_common.h"

namespace waste_cli {
namespace {

std::atomic<bool> interrupted{false};

BOOL WINAPI on_control(DWORD event) {
    if (event != CTRL_C_EVENT && event != CTRL_BREAK_EVENT) return FALSE;  // closing, logoff: the default
    interrupted.store(true);
    return TRUE;
}

}  // namespace

void install_interrupt_handler() {
    if (!::SetConsoleCtrlHandler(on_control, TRUE))
        throw RuntimeFailure{"chat: cannot install the Ctrl-C handler (SetConsoleCtrlHandler failed)"};
}

int interrupt_requested() { return interrupted.load() ? 1 : 0; }

void clear_interrupt() { interrupted.store(false); }

LineResult read_line(std::string& line) {
    line.clear();
    HANDLE input = ::GetStdHandle(STD_INPUT_HANDLE);
    for (;;) {
        if (interrupted.load()) {
            clear_interrupt();
            return LineResult::interrupted;
        }
        char c = 0;
        DWORD got = 0;
        const BOOL ok = ::ReadFile(input, &c, 1, &got, nullptr);
        if (ok && got == 1) {
            if (c == '\n') return LineResult::line;
            if (c != '\r') line.push_back(c);
            continue;
        }
        // The control handler runs on its own thread: give it a moment to
        // set the flag when the read was cut short by Ctrl-C.
        if ((!ok && ::GetLastError() == ERROR_OPERATION_ABORTED) || (ok && got == 0 && ::GetFileType(input) == FILE_TYPE_CHAR))
            ::Sleep(50);
        if (interrupted.load()) continue;
        return line.empty() ? LineResult::end : LineResult::line;  // end of input (Ctrl-Z, a closed pipe) or an error
    }
}

}  // namespace waste_cli
