// serve_http_fuzz.cpp — libFuzzer target over the server's HTTP request
// path: the input is the byte stream a client sends on one connection
// (request lines, methods, headers, Content-Length and chunked bodies,
// several requests kept alive), served by the server's own connection
// handling (HttpServer over cpp-httplib's parser, pre-routing's
// authentication and limits, the routes, the error handler) through a
// socket pair. No model is loaded: the model's routes answer 503
// model_loading after everything before them ran (the bodies' own parsing
// is serve_request_fuzz's).
//
// Every answer must be an HTTP/1.1 status line with a 2xx, 4xx or 503
// status, an error answer's body OpenAI's error object (or /health's
// {"status":"loading"}), and when the
// connection ends no request memory may stay reserved. A crash, a hang, a
// leak or a sanitizer report is a finding.
// Seeds: fuzz/seeds/serve_http_fuzz/ (requests as a client sends them).
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "http_connections.h"
#include "server_context.h"

namespace {

struct Server {
    waste_serve::ServerContext ctx;
    std::unique_ptr<waste_serve::HttpServer> http;

    Server() {
        ctx.settings.api_key = "fuzz-key";
        ctx.settings.max_body = 1 << 20;
        ctx.request_memory = std::make_unique<waste_serve::RequestMemory>(uint64_t{8} << 20);
        ctx.slots = std::make_unique<waste_serve::Slots>(1, 2, ctx.metrics);
        waste_serve::ConnectionLimits limits;
        limits.request_timeout = std::chrono::milliseconds(2000);
        limits.read_timeout = std::chrono::milliseconds(1000);
        http = std::make_unique<waste_serve::HttpServer>(limits);
        waste_serve::configure_http(*http, ctx);
    }
};

Server& server() {
    static Server* s = new Server;  // lives for the process: its threads serve the overflow lane
    return *s;
}

// Walks the answers in order, each by its Content-Length (the server
// writes no chunked answer without a model).
void check_answers(const std::string& out) {
    for (size_t at = 0; at < out.size();) {
        if (out.compare(at, 9, "HTTP/1.1 ") != 0 || at + 12 > out.size()) __builtin_trap();
        const int status = std::atoi(out.substr(at + 9, 3).c_str());
        if (!((status >= 200 && status < 300) || (status >= 400 && status < 500) || status == 503)) __builtin_trap();
        const size_t head_end = out.find("\r\n\r\n", at);
        if (head_end == std::string::npos) __builtin_trap();
        const std::string head = out.substr(at, head_end - at);
        const size_t length_at = head.find("\r\nContent-Length: ");
        const size_t length = length_at == std::string::npos ? 0 : std::strtoull(head.c_str() + length_at + 18, nullptr, 10);
        const size_t body = head_end + 4;
        // An answer to HEAD has no body: the next answer or the end follows.
        if (length == 0 || body >= out.size() || out.compare(body, 9, "HTTP/1.1 ") == 0) {
            at = body;
            continue;
        }
        if (body + length > out.size()) __builtin_trap();
        // An error is OpenAI's error object; /health while loading says so.
        if (status >= 400 && out.compare(body, 9, "{\"error\":") != 0 &&
            !(status == 503 && out.substr(body, length).find("\"status\":\"loading\"") != std::string::npos))
            __builtin_trap();
        at = body + length;
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    Server& s = server();
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, pair) != 0) return 0;
    std::string out;
    std::thread client([&] {
        for (size_t sent = 0; sent < size;) {
            const ssize_t n = send(pair[0], data + sent, size - sent, MSG_NOSIGNAL);
            if (n <= 0) break;
            sent += static_cast<size_t>(n);
        }
        shutdown(pair[0], SHUT_WR);
        char buffer[4096];
        for (ssize_t n; (n = recv(pair[0], buffer, sizeof buffer, 0)) > 0;) out.append(buffer, static_cast<size_t>(n));
    });
    s.http->serve_connection(pair[1]);  // closes pair[1]
    client.join();
    close(pair[0]);
    check_answers(out);
    if (s.ctx.request_memory->in_use() != 0) __builtin_trap();
    return 0;
}
