// socket_io.h — the few socket calls the server makes itself, beside what
// cpp-httplib does: POSIX sockets, or Winsock on Windows
// (socket_io_posix.cpp, socket_io_windows.cpp; socket_io.cpp for what is
// the same on both). A socket is httplib's
// socket_t (an int, or a SOCKET); pollfd and POLLIN/POLLOUT/POLLHUP/POLLERR
// are the system's (poll(2), or WSAPoll's).
#pragma once

#include <httplib.h>

#include <cstddef>
#include <string>

#if !defined(_WIN32)
#include <poll.h>
#include <sys/types.h>
#endif

namespace waste_serve {

using Socket = socket_t;

// poll(2) over sockets (WSAPoll on Windows); timeout_ms < 0 waits forever.
int poll_sockets(pollfd* fds, size_t count, int timeout_ms);
// recv / send; a send to a client that went away fails (never SIGPIPE).
ssize_t receive_bytes(Socket socket, char* buffer, size_t size);
ssize_t send_bytes(Socket socket, const char* data, size_t size);
// Both directions shut: a blocked read or write on it returns.
void shutdown_socket(Socket socket);
void close_socket(Socket socket);
// The client closed or half-closed its side (or the socket failed), seen
// without waiting and without taking a byte of a request it pipelined. No
// HTTP client waiting for an answer half-closes, and servers such as nginx
// treat it as an abort too. Checked before each generated token, so a
// generation stops within one token of the client leaving, blocking
// requests included — a failed write alone noticed a streaming client only
// a token or two later (the first write after the close still lands in the
// kernel's buffer), and a blocking one never. One poll with no wait: ~1 µs.
bool peer_hung_up(Socket socket);
// The peer's (or this side's) address as text, and its port; left as they
// are when the socket has none.
void socket_address(Socket socket, bool peer, std::string& ip, int& port);

// Wakes a thread blocked in poll_sockets: its socket() polls readable after
// wake(), until drain(). A pipe on POSIX; on Windows, where WSAPoll takes
// sockets only, a loopback UDP socket connected to itself.
class PollWaker {
public:
    PollWaker();
    ~PollWaker();
    PollWaker(const PollWaker&) = delete;
    PollWaker& operator=(const PollWaker&) = delete;

    Socket socket() const { return read_end_; }
    void wake();
    void drain();

private:
    Socket read_end_ = INVALID_SOCKET;
    Socket write_end_ = INVALID_SOCKET;
};

}  // namespace waste_serve
