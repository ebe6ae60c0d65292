// socket_io.cpp — what socket_io.h does the same on every system (the
// address calls are BSD sockets' on POSIX and Winsock alike; on Windows
// httplib.h includes winsock2.h and ws2tcpip.h).
#include "socket_io.h"

#if !defined(_WIN32)
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#endif

namespace waste_serve {

void socket_address(Socket socket, bool peer, std::string& ip, int& port) {
    sockaddr_storage address{};
    socklen_t size = sizeof address;
    const int got = peer ? getpeername(socket, reinterpret_cast<sockaddr*>(&address), &size)
                         : getsockname(socket, reinterpret_cast<sockaddr*>(&address), &size);
    if (got != 0) return;
    char host[INET6_ADDRSTRLEN] = {};
    if (address.ss_family == AF_INET) {
        const auto* in = reinterpret_cast<const sockaddr_in*>(&address);
        inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
        port = ntohs(in->sin_port);
    } else if (address.ss_family == AF_INET6) {
        const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&address);
        inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
        port = ntohs(in6->sin6_port);
    }
    ip = host;
}

}  // namespace waste_serve
