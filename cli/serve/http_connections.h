// http_connections.h — what one client connection may take from `waste
// serve`. cpp-httplib accepts and parses; HttpServer decides how each
// accepted connection is read and when it ends:
//
// - A cap: at most max_connections are served at once, each on a worker
//   thread of its own (a streaming answer holds one). A connection beyond it
//   goes to an overflow lane that waits for its request without holding a
//   thread, then answers GET /health as usual (a load balancer's probe
//   always gets its answer) and anything else 503 too_many_connections, and
//   closes. Past kOverflowBacklog connections waiting there, or
//   kOverflowRequestTimeout without a byte, a connection is closed
//   unanswered.
// - A whole-request deadline: a request's line, headers and body must all
//   arrive within request_timeout of the moment it may start, whatever their
//   pace (one byte a second keeps no thread): 408, and the connection closes.
//   The head (request line and headers) is at most kMaxHeadBytes: 431.
// - Idle connections hold no thread: a connection with no request bytes
//   waiting (before its first request, or kept alive between two) waits in
//   one poller, not on a worker, and does not count against the cap; when
//   its next request arrives it is served like a new connection (a worker if
//   fewer than max_connections are served, else the overflow lane). At most
//   max_idle_connections wait: past that, answers say `Connection: close`.
// - An idle limit: a connection that sends nothing for idle_timeout before
//   its first request is closed; between two requests, for idle_timeout +
//   kKeepAliveCloseGrace. Answers advertise idle_timeout (Keep-Alive:
//   timeout=N): a client pool that reuses a connection at that age (Node
//   20's agent ignores the hint and reuses at any age) still finds it open
//   instead of sending its request into a closing connection.
// - Stopping: stop_reading() closes the connections that are idle or still
//   reading a request (the server takes no new one); cut_all() also cuts the
//   ones whose answer is being made, after the grace period.
//
// Handlers reach their connection through current_connection(): the socket
// (to notice a client that hung up), the lane, whether the connection must
// close after this answer, and the request's memory reservation.
#pragma once

#include <httplib.h>

#include <memory>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "request_memory.h"
#include "socket_io.h"

namespace waste_serve {

struct ConnectionLimits {
    size_t max_connections = 73;                        // served at once (parallel + queue + 8 by default)
    std::chrono::milliseconds request_timeout{60'000};  // line, headers and body of one request
    std::chrono::milliseconds idle_timeout{5'000};      // before a request, or between two (advertised, whole seconds)
    std::chrono::milliseconds read_timeout{10'000};     // silence within a request
    std::chrono::milliseconds write_timeout{30'000};    // a client that reads nothing of its answer
    size_t max_requests_per_connection = 1000;          // then the connection closes (keep-alive's max)
    // Waiting idle in one poller, a descriptor each and no thread. Why 512:
    // with the served and overflow ones it stays inside the usual
    // 1,024-descriptor soft limit.
    size_t max_idle_connections = 512;
};

// Why 64 KiB: browsers and proxies send a few KiB at most; nginx's default
// allowance is 4 x 8 KiB. Why the overflow lane's numbers: it answers in
// milliseconds (one request, kOverflowRequestTimeout to arrive), so two
// threads serve hundreds of probes a second.
constexpr size_t kMaxHeadBytes = 64 << 10;
constexpr size_t kOverflowThreads = 2;
constexpr size_t kOverflowBacklog = 256;
constexpr std::chrono::milliseconds kOverflowRequestTimeout{2'000};
// Why 1 s: a client pool that reuses connections at the advertised age
// sends its request within milliseconds; Node 24.6's server keeps its
// connections the same 1 s past its advertised limit (keepAliveTimeoutBuffer).
constexpr std::chrono::milliseconds kKeepAliveCloseGrace{1'000};


// In order: stop_reading() cuts a connection up to body.
enum class ConnectionPhase { waiting, head, body, answering };

// One served connection, on its worker thread's stack.
struct Connection {
    Socket socket = INVALID_SOCKET;
    bool overflow = false;              // accepted past the cap: /health only
    bool close_after_response = false;  // a refusal left its body unread
    bool timed_out = false;             // the request missed its deadline (408)
    bool head_too_large = false;        // the head passed kMaxHeadBytes (431)
    std::atomic<ConnectionPhase> phase{ConnectionPhase::waiting};  // read by HttpServer::cut from another thread
    std::optional<RequestMemory::Reservation> memory;  // this request's share of --request-memory
};

// The connection this thread is serving, or nullptr outside a request.
Connection* current_connection();

// Pre-routing marks the current request's head as read (its body comes
// next); a handler marks it answering (its body is in): stop_reading()
// leaves an answering request to finish.
void mark_reading_body();
void mark_answering();

class OverflowLane;
class IdleLane;
class LanedTaskQueue;

class HttpServer : public httplib::Server {
public:
    explicit HttpServer(ConnectionLimits limits);
    ~HttpServer() override;

    // Binds host:port (0: any free port) and listens with a backlog of
    // SOMAXCONN (httplib's 5 drops the connections of a burst past it,
    // which the client retries a second later); the port, or -1.
    int bind(const std::string& host, int port);
    // No connection takes another request; those waiting for one or still
    // reading one are closed now.
    void stop_reading();
    // Every connection is cut (a write fails, a hang-up check sees it).
    void cut_all();
    size_t open_connections() const;
    // Serves one accepted connection on this thread, as a main-lane worker
    // does, and closes it (the HTTP fuzz target feeds it a socket pair).
    bool serve_connection(Socket socket) { return serve(socket, false, 0, false); }
    const ConnectionLimits& limits() const { return limits_; }

private:
    friend class OverflowLane;
    friend class IdleLane;
    friend class LanedTaskQueue;
    bool process_and_close_socket(socket_t sock) override;
    // Serves sock's requests from its requests_done-th on (one, past the
    // cap), then closes it, or parks it in the idle lane when no request is
    // waiting (may_park; else waits for one up to idle_timeout on this thread).
    bool serve(Socket sock, bool overflow, size_t requests_done, bool may_park = true);
    // A parked connection's next request arrived: the main lane, or past the
    // cap the overflow lane.
    void resume(Socket sock, size_t requests_done);
    void forget_queue();
    // When a connection that has had requests_done requests is closed for
    // sending nothing (the idle limit), counted from now.
    std::chrono::steady_clock::time_point idle_deadline(size_t requests_done) const;
    bool wait_for_request(Socket socket, size_t requests_done) const;
    void cut(ConnectionPhase up_to);

    ConnectionLimits limits_;
    std::atomic<bool> stopping_{false};
    mutable std::mutex mutex_;
    std::set<Connection*> open_;
    std::mutex queue_mutex_;
    LanedTaskQueue* queue_ = nullptr;  // httplib's, while it listens
    // Last: their threads serve through this server. idle_ after overflow_,
    // so it is destroyed (its poller stopped) before the lane it hands to.
    std::unique_ptr<OverflowLane> overflow_;
    std::unique_ptr<IdleLane> idle_;
};

}  // namespace waste_serve
