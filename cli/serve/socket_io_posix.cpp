// socket_io_posix.cpp — socket_io.h on Linux and macOS.
#include "socket_io.h"

#include <sys/socket.h>
#include <unistd.h>

namespace waste_serve {

int poll_sockets(pollfd* fds, size_t count, int timeout_ms) { return ::poll(fds, static_cast<nfds_t>(count), timeout_ms); }

ssize_t receive_bytes(Socket socket, char* buffer, size_t size) { return ::recv(socket, buffer, size, 0); }

ssize_t send_bytes(Socket socket, const char* data, size_t size) {
#if defined(MSG_NOSIGNAL)
    return ::send(socket, data, size, MSG_NOSIGNAL);
#else
    return ::send(socket, data, size, 0);  // macOS: serve() ignores SIGPIPE
#endif
}

void shutdown_socket(Socket socket) { ::shutdown(socket, SHUT_RDWR); }

void close_socket(Socket socket) { ::close(socket); }

bool peer_hung_up(Socket socket) {
    if (socket < 0) return false;
#if defined(POLLRDHUP)
    // One poll(2) with no wait: ~1 µs.
    pollfd p{socket, POLLRDHUP, 0};
    return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
#else
    pollfd p{socket, POLLIN, 0};
    if (::poll(&p, 1, 0) <= 0) return false;
    if (p.revents & (POLLHUP | POLLERR | POLLNVAL)) return true;
    char byte;
    return ::recv(socket, &byte, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
#endif
}

PollWaker::PollWaker() {
    int ends[2];
    if (::pipe(ends) != 0) return;  // then wake() does nothing: pollers wake on their own timeout
    read_end_ = ends[0];
    write_end_ = ends[1];
}

PollWaker::~PollWaker() {
    if (read_end_ >= 0) ::close(read_end_);
    if (write_end_ >= 0) ::close(write_end_);
}

void PollWaker::wake() {
    const char byte = 0;
    if (write_end_ >= 0) {
        [[maybe_unused]] const ssize_t n = ::write(write_end_, &byte, 1);
    }
}

void PollWaker::drain() {
    char bytes[64];
    if (read_end_ >= 0) {
        [[maybe_unused]] const ssize_t n = ::read(read_end_, bytes, sizeof bytes);
    }
}

}  // namespace waste_serve
