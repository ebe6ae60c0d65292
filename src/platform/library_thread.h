// library_thread.h — how the library starts a thread.
//
// A process-directed signal (Ctrl-C's SIGINT, SIGTERM, SIGWINCH, ...) is
// delivered to any thread that does not block it. If one of the library's
// workers took it, the application's handler would run there and the
// application's own blocking read() would never see EINTR: `waste chat` could
// not stop an answer or discard a line. So every thread the library starts
// blocks the asynchronous signals, leaving them to the application's threads.
// Synchronous faults (SIGSEGV, SIGBUS, SIGFPE) stay unblocked so crashes are
// still reported where they happen.
//
// Windows has no such signals: Ctrl-C runs the console handler on a thread
// of its own, so a library thread is a plain thread there.
#pragma once

#if !defined(_WIN32)
#include <pthread.h>
#include <signal.h>
#endif

#include <thread>
#include <utility>

namespace waste::platform {

template <typename Body>
std::thread start_library_thread(Body&& body) {
#if defined(_WIN32)
    return std::thread(std::forward<Body>(body));
#else
    sigset_t asynchronous, previous;
    sigemptyset(&asynchronous);
    for (int signal_number : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, SIGCHLD, SIGWINCH, SIGTSTP,
                              SIGCONT, SIGTTIN, SIGTTOU})
        sigaddset(&asynchronous, signal_number);
    // The new thread inherits the mask in force while it is created.
    pthread_sigmask(SIG_BLOCK, &asynchronous, &previous);
    struct Restore {
        sigset_t* mask;
        ~Restore() { pthread_sigmask(SIG_SETMASK, mask, nullptr); }
    } restore{&previous};
    return std::thread(std::forward<Body>(body));
#endif
}

}  // namespace waste::platform
