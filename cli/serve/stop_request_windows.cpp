// stop_request_windows.cpp — stop_request.h on Windows: a console control
// handler (it runs on a thread of its own) records the event and wakes the
// waiting thread. The server then stops as on POSIX; for the console
// closing, log-off and shutdown events Windows ends the process once the
// handler returns, so the handler waits for the stop (at most the few
// seconds Windows allows).
#include "stop_request.h"

#include <windows.h>

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace waste_serve {

namespace {

std::mutex g_mutex;
std::condition_variable g_asked;
const char* g_event = nullptr;

const char* event_name(DWORD event) {
    switch (event) {
        case CTRL_C_EVENT: return "Ctrl-C";
        case CTRL_BREAK_EVENT: return "Ctrl-Break";
        case CTRL_CLOSE_EVENT: return "console close";
        case CTRL_LOGOFF_EVENT: return "log-off";
        case CTRL_SHUTDOWN_EVENT: return "shutdown";
        default: return nullptr;
    }
}

BOOL WINAPI on_console_event(DWORD event) {
    const char* name = event_name(event);
    if (!name) return FALSE;
    {
        std::lock_guard lock(g_mutex);
        if (!g_event) g_event = name;
    }
    g_asked.notify_all();
    if (event == CTRL_CLOSE_EVENT || event == CTRL_LOGOFF_EVENT || event == CTRL_SHUTDOWN_EVENT)
        ::Sleep(5000);  // the process ends when this returns: let the server stop first
    return TRUE;
}

}  // namespace

void prepare_stop_requests() { ::SetConsoleCtrlHandler(on_console_event, TRUE); }

std::string wait_for_stop_request() {
    std::unique_lock lock(g_mutex);
    g_asked.wait(lock, [] { return g_event != nullptr; });
    return g_event;
}

}  // namespace waste_serve
