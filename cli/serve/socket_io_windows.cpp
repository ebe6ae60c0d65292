// socket_io_windows.cpp — socket_io.h over Winsock (httplib.h includes
// winsock2.h and ws2tcpip.h, and starts Winsock before main).
#include "socket_io.h"

#include <algorithm>
#include <climits>

namespace waste_serve {

namespace {

int clamp_length(size_t size) { return static_cast<int>(std::min<size_t>(size, INT_MAX)); }

}  // namespace

int poll_sockets(pollfd* fds, size_t count, int timeout_ms) { return ::WSAPoll(fds, static_cast<ULONG>(count), timeout_ms); }

ssize_t receive_bytes(Socket socket, char* buffer, size_t size) { return ::recv(socket, buffer, clamp_length(size), 0); }

// Winsock raises no signal on a connection the peer closed: the send fails.
ssize_t send_bytes(Socket socket, const char* data, size_t size) { return ::send(socket, data, clamp_length(size), 0); }

void shutdown_socket(Socket socket) { ::shutdown(socket, SD_BOTH); }

void close_socket(Socket socket) { ::closesocket(socket); }

// WSAPoll has no POLLRDHUP: a readable socket whose next recv would return
// 0 (peeked, nothing taken) is one the client closed or half-closed.
bool peer_hung_up(Socket socket) {
    if (socket == INVALID_SOCKET) return false;
    WSAPOLLFD p{socket, POLLRDNORM, 0};
    if (::WSAPoll(&p, 1, 0) <= 0) return false;
    if (p.revents & (POLLHUP | POLLERR | POLLNVAL)) return true;
    char byte;
    return ::recv(socket, &byte, 1, MSG_PEEK) == 0;
}

// One UDP socket bound to a loopback port and connected to itself: a
// datagram sent on it makes it readable. Non-blocking, so a wake() with
// the buffer full and a drain() with nothing queued return at once.
PollWaker::PollWaker() {
    const Socket s = ::socket(AF_INET, SOCK_DGRAM, IPPROTO_UDP);
    if (s == INVALID_SOCKET) return;
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int size = sizeof address;
    u_long non_blocking = 1;
    if (::bind(s, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        ::getsockname(s, reinterpret_cast<sockaddr*>(&address), &size) != 0 ||
        ::connect(s, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 || ::ioctlsocket(s, FIONBIO, &non_blocking) != 0) {
        ::closesocket(s);
        return;  // then wake() does nothing: pollers wake on their own timeout
    }
    read_end_ = write_end_ = s;
}

PollWaker::~PollWaker() {
    if (read_end_ != INVALID_SOCKET) ::closesocket(read_end_);
}

void PollWaker::wake() {
    const char byte = 0;
    if (write_end_ != INVALID_SOCKET) ::send(write_end_, &byte, 1, 0);
}

void PollWaker::drain() {
    char bytes[64];
    if (read_end_ != INVALID_SOCKET)
        while (::recv(read_end_, bytes, sizeof bytes, 0) > 0) {
        }
}

}  // namespace waste_serve
