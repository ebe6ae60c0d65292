// stop_request_posix.cpp — stop_request.h on Linux and macOS.
#include "stop_request.h"

#include <pthread.h>
#include <signal.h>

namespace waste_serve {

namespace {

sigset_t stop_signals() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    return set;
}

}  // namespace

void prepare_stop_requests() {
    const sigset_t set = stop_signals();
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    signal(SIGPIPE, SIG_IGN);
}

std::string wait_for_stop_request() {
    const sigset_t set = stop_signals();
    int signal_number = 0;
    sigwait(&set, &signal_number);
    return signal_number == SIGINT ? "SIGINT" : "SIGTERM";
}

}  // namespace waste_serve
