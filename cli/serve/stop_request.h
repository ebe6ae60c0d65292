// stop_request.h — how `waste serve` is asked to stop: SIGINT or SIGTERM on
// POSIX (stop_request_posix.cpp), a console control event on Windows —
// Ctrl-C, Ctrl-Break, the console closing, log-off or shutdown
// (stop_request_windows.cpp).
#pragma once

#include <string>

namespace waste_serve {

// Before any thread starts: stop requests are taken by wait_for_stop_request
// alone (POSIX: SIGINT and SIGTERM blocked in every thread, and SIGPIPE
// ignored, so a client that went away is a failed write, never the end of
// the server).
void prepare_stop_requests();

// Blocks until a stop is asked for; its name ("SIGTERM", "Ctrl-C", ...).
std::string wait_for_stop_request();

}  // namespace waste_serve
