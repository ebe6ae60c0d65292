// http_connections_test.cpp — the server's connection layer
// (cli/serve/http_connections.h) on loopback, through cpp-httplib's client.
//
// Nagle's algorithm is off on every connection the server accepts. An
// answer goes out as several sends (headers, body, each streamed event);
// with Nagle on, a send waits for the ACK of the one before, and a client
// that delays its ACKs stalls each answer on a kept-alive connection by up
// to 40 ms (measured before the fix with Node's fetch and http.Agent: 46–50
// ms a request against 2–3 ms after; curl, one connection a request, never
// saw it). Timing is not asserted (it depends on the client's ACKs); the
// option on the socket the handler answers on is, for the first request of
// a connection and for a later one on the same kept-alive connection.
#include <gtest/gtest.h>

#ifdef _WIN32
#include <winsock2.h>
#include <ws2tcpip.h>
#else
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#endif

#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>

#include "http_connections.h"

namespace {

int nodelay_of(waste_serve::Socket socket) {
    int value = -1;
    socklen_t size = sizeof value;
    if (getsockopt(socket, IPPROTO_TCP, TCP_NODELAY, reinterpret_cast<char*>(&value), &size) != 0) return -1;
    return value;
}

TEST(HttpConnections, EveryAcceptedConnectionSendsWithoutNaglesDelay) {
    waste_serve::HttpServer server(waste_serve::ConnectionLimits{});
    std::vector<int> seen;  // TCP_NODELAY of the answering socket, per request
    std::mutex mutex;
    server.Get("/probe", [&](const httplib::Request&, httplib::Response& res) {
        const waste_serve::Connection* connection = waste_serve::current_connection();
        ASSERT_NE(connection, nullptr);
        {
            std::lock_guard lock(mutex);
            seen.push_back(nodelay_of(connection->socket));
        }
        res.set_content("ok", "text/plain");
    });
    const int port = server.bind("127.0.0.1", 0);
    ASSERT_GT(port, 0);
    std::thread listener([&] { server.listen_after_bind(); });

    httplib::Client client("127.0.0.1", port);
    client.set_keep_alive(true);  // the second request on the first's connection
    for (int i = 0; i < 2; ++i) {
        auto answer = client.Get("/probe");
        ASSERT_TRUE(answer) << "request " << i << ": " << httplib::to_string(answer.error());
        EXPECT_EQ(answer->status, 200);
    }
    httplib::Client other("127.0.0.1", port);  // and a second connection
    auto answer = other.Get("/probe");
    ASSERT_TRUE(answer);

    while (!server.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    server.stop();
    listener.join();
    std::lock_guard lock(mutex);
    ASSERT_EQ(seen.size(), 3u);
    for (size_t i = 0; i < seen.size(); ++i) EXPECT_NE(seen[i], 0) << "request " << i << " was answered with Nagle's algorithm on";
    for (size_t i = 0; i < seen.size(); ++i) EXPECT_NE(seen[i], -1) << "request " << i << ": getsockopt failed";
}

}  // namespace
