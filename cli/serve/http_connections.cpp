// http_connections.cpp — see http_connections.h.
#include "http_connections.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

namespace waste_serve {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

thread_local Connection* t_connection = nullptr;

// Where the task queue sent the connection httplib's task is about to
// serve (process_and_close_socket reads it on the same thread).
enum class Lane { main, overflow };
thread_local Lane t_lane = Lane::main;

int poll_for(Socket socket, short events, milliseconds wait) {
    pollfd p{socket, events, 0};
    const int ready = poll_sockets(&p, 1, static_cast<int>(std::max<int64_t>(0, wait.count())));
    if (ready <= 0) return ready;
    return (p.revents & (events | POLLHUP | POLLERR)) ? 1 : 0;
}

// A connection's socket as httplib reads and writes it, with the request's
// deadline and head limit: a read past the deadline or past kMaxHeadBytes
// of head fails (httplib then answers 400, which the error handler turns
// into 408 or 431 by the flags set here).
class DeadlineStream : public httplib::Stream {
public:
    DeadlineStream(Connection& connection, const ConnectionLimits& limits) : connection_(connection), limits_(limits) {}

    void start_request(Clock::time_point deadline) {
        deadline_ = deadline;
        head_bytes_ = 0;
    }

    bool is_readable() const override { return buffered() > 0 || wait_readable(); }
    bool has_buffered() const { return buffered() > 0; }
    bool is_writable() const override { return poll_for(connection_.socket, POLLOUT, limits_.write_timeout) > 0; }

    ssize_t read(char* ptr, size_t size) override {
        if (buffered() == 0) {
            if (!wait_readable()) return -1;
            const ssize_t got = receive_bytes(connection_.socket, buffer_, sizeof buffer_);
            if (got <= 0) return got;
            begin_ = 0;
            end_ = static_cast<size_t>(got);
        }
        size_t n = std::min(size, buffered());
        if (connection_.phase == ConnectionPhase::head) {
            // A head with no end in sight is refused. (The body, read after
            // pre-routing, is bounded by its declared length instead.)
            if (head_bytes_ + n > kMaxHeadBytes) {
                connection_.head_too_large = true;
                return -1;
            }
            head_bytes_ += n;
        }
        std::memcpy(ptr, buffer_ + begin_, n);
        begin_ += n;
        return static_cast<ssize_t>(n);
    }

    ssize_t write(const char* ptr, size_t size) override {
        if (!is_writable()) return -1;
        return send_bytes(connection_.socket, ptr, size);
    }

    void get_remote_ip_and_port(std::string& ip, int& port) const override { socket_address(connection_.socket, true, ip, port); }
    void get_local_ip_and_port(std::string& ip, int& port) const override { socket_address(connection_.socket, false, ip, port); }
    socket_t socket() const override { return connection_.socket; }

private:
    size_t buffered() const { return end_ - begin_; }

    // Waits for bytes within both the silence limit and the request's
    // deadline; a deadline passed marks the connection timed out.
    bool wait_readable() const {
        const auto left = std::chrono::duration_cast<milliseconds>(deadline_ - Clock::now());
        if (left.count() <= 0) {
            connection_.timed_out = true;
            return false;
        }
        // A poll that waited out what was left of the deadline (its
        // milliseconds may end a fraction early) is a missed deadline.
        const int ready = poll_for(connection_.socket, POLLIN, std::min(left, limits_.read_timeout));
        if (ready == 0 && left <= limits_.read_timeout) connection_.timed_out = true;
        return ready > 0;
    }

    Connection& connection_;
    const ConnectionLimits& limits_;
    Clock::time_point deadline_ = Clock::now();
    size_t head_bytes_ = 0;
    char buffer_[4096];
    size_t begin_ = 0;
    size_t end_ = 0;
};

}  // namespace

// Worker threads taking tasks in order; pending() counts the tasks queued
// or running. (Outside the anonymous namespace: the lanes below, declared in
// the header, hold one.)
class WorkerLane {
public:
    explicit WorkerLane(size_t threads) {
        for (size_t i = 0; i < threads; ++i)
            workers_.emplace_back([this] {
                for (;;) {
                    std::function<void()> task;
                    {
                        std::unique_lock lock(mutex_);
                        ready_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
                        if (tasks_.empty()) return;
                        task = std::move(tasks_.front());
                        tasks_.pop_front();
                    }
                    task();
                    std::lock_guard lock(mutex_);
                    --pending_;
                }
            });
    }
    // Queues task unless `limit` are already queued or running (false:
    // not queued).
    bool push_below(size_t limit, std::function<void()> task) {
        {
            std::lock_guard lock(mutex_);
            if (stopping_ || pending_ >= limit) return false;
            tasks_.push_back(std::move(task));
            ++pending_;
        }
        ready_.notify_one();
        return true;
    }
    void join() {
        {
            std::lock_guard lock(mutex_);
            stopping_ = true;
        }
        ready_.notify_all();
        for (auto& worker : workers_) worker.join();
    }

private:
    mutable std::mutex mutex_;
    std::condition_variable ready_;
    std::deque<std::function<void()>> tasks_;
    size_t pending_ = 0;
    bool stopping_ = false;
    std::vector<std::thread> workers_;
};

// httplib hands each accepted connection to enqueue() on its listener
// thread: a connection goes to the main lane while fewer than
// max_connections are there (queued or served), so it never waits for a
// thread; else its task runs at once, on this thread, and hands the socket
// to the overflow lane (HttpServer::process_and_close_socket). A kept-alive
// connection whose next request arrives comes back through try_main().
class LanedTaskQueue : public httplib::TaskQueue {
public:
    LanedTaskQueue(HttpServer& server, size_t max_connections)
        : server_(server), main_(max_connections), max_connections_(max_connections) {}

    void enqueue(std::function<void()> task) override {
        if (main_.push_below(max_connections_, task)) return;
        t_lane = Lane::overflow;
        task();
        t_lane = Lane::main;
    }
    bool try_main(std::function<void()> task) { return main_.push_below(max_connections_, std::move(task)); }

    // httplib deletes the queue after this: the server stops handing it
    // connections first.
    void shutdown() override {
        server_.forget_queue();
        main_.join();
    }

private:
    HttpServer& server_;
    WorkerLane main_;
    size_t max_connections_;
};

// Sockets waiting for their next bytes, all polled by one thread: each is
// handed to on_ready once it is readable (or hung up), or closed once its
// deadline passes; at most `capacity` wait. stop() closes every one still
// waiting and takes no more.
class ReadyPoller {
public:
    using OnReady = std::function<void(Socket socket, size_t requests_done)>;

    ReadyPoller(size_t capacity, OnReady on_ready) : capacity_(capacity), on_ready_(std::move(on_ready)) {
        thread_ = std::thread([this] { poll_loop(); });
    }
    ~ReadyPoller() {
        stop();
        thread_.join();
    }

    // False, and the socket is left to the caller, when full or stopped.
    bool add(Socket socket, Clock::time_point deadline, size_t requests_done) {
        {
            std::lock_guard lock(mutex_);
            if (stopping_ || waiting_.size() >= capacity_) return false;
            waiting_.push_back({socket, deadline, requests_done});
        }
        waker_.wake();
        return true;
    }
    bool has_room() const {
        std::lock_guard lock(mutex_);
        return !stopping_ && waiting_.size() < capacity_;
    }
    size_t size() const {
        std::lock_guard lock(mutex_);
        return waiting_.size();
    }
    void stop() {
        {
            std::lock_guard lock(mutex_);
            stopping_ = true;
        }
        waker_.wake();
    }

private:
    struct Waiting {
        Socket socket;
        Clock::time_point deadline;
        size_t requests_done;
    };

    void poll_loop() {
        for (;;) {
            std::vector<Waiting> waiting;
            {
                std::lock_guard lock(mutex_);
                if (stopping_) break;
                waiting = waiting_;
            }
            std::vector<pollfd> fds{{waker_.socket(), POLLIN, 0}};
            for (const Waiting& w : waiting) fds.push_back({w.socket, POLLIN, 0});
            poll_sockets(fds.data(), fds.size(), 100);
            if (fds[0].revents & POLLIN) waker_.drain();
            const auto now = Clock::now();
            std::vector<Waiting> ready;
            {
                std::lock_guard lock(mutex_);
                if (stopping_) break;
                for (size_t i = 0; i < waiting.size(); ++i) {
                    const bool readable = fds[i + 1].revents != 0;
                    if (!readable && now < waiting[i].deadline) continue;
                    const Socket socket = waiting[i].socket;
                    std::erase_if(waiting_, [socket](const Waiting& w) { return w.socket == socket; });
                    if (readable) ready.push_back(waiting[i]);
                    else close_socket(socket);
                }
            }
            for (const Waiting& w : ready) on_ready_(w.socket, w.requests_done);
        }
        std::lock_guard lock(mutex_);
        for (const Waiting& w : waiting_) close_socket(w.socket);
        waiting_.clear();
    }

    const size_t capacity_;
    const OnReady on_ready_;
    std::thread thread_;
    PollWaker waker_;
    mutable std::mutex mutex_;
    std::vector<Waiting> waiting_;
    bool stopping_ = false;
};

// Connections past the cap wait in a poller until each has sent something
// (a load balancer's probe sends its request at once; a client that sends
// nothing for kOverflowRequestTimeout is closed), then two workers serve
// that one request. So a connection that sends slowly or not at all never
// holds a worker, and /health is answered whatever the others do; past
// kOverflowBacklog waiting, a connection is closed unanswered.
class OverflowLane {
public:
    explicit OverflowLane(HttpServer& server)
        : server_(server), workers_(kOverflowThreads), poller_(kOverflowBacklog, [this](Socket socket, size_t requests_done) {
              serve_now(socket, requests_done);
          }) {}
    ~OverflowLane() {
        poller_.stop();
        workers_.join();
    }

    void add(Socket socket) {
        if (!poller_.add(socket, Clock::now() + kOverflowRequestTimeout, 0)) close_socket(socket);
    }
    // A socket whose request has arrived: its one answer, then it closes.
    void serve_now(Socket socket, size_t requests_done) {
        if (!workers_.push_below(kOverflowBacklog, [this, socket, requests_done] { server_.serve(socket, true, requests_done); }))
            close_socket(socket);
    }

private:
    HttpServer& server_;
    WorkerLane workers_;
    ReadyPoller poller_;  // after workers_: destroyed first, so it never pushes to a joined lane
};

// Kept-alive connections between two requests, and new ones before their
// first byte: they wait in a poller, not on a worker, so an idle connection
// neither holds a thread nor counts against max_connections. Once a request
// arrives the connection goes back to the main lane if fewer than
// max_connections are served, else to the overflow lane (one answer, as for
// a connection accepted past the cap). Silent past its idle deadline
// (HttpServer::idle_deadline): closed.
// At most max_idle_connections wait; when it is full, an answer goes out with
// `Connection: close` instead of parking its connection.
class IdleLane {
public:
    explicit IdleLane(HttpServer& server)
        : server_(server),
          poller_(server.limits().max_idle_connections, [this](Socket socket, size_t requests_done) { server_.resume(socket, requests_done); }) {}

    bool park(Socket socket, size_t requests_done) {
        return poller_.add(socket, server_.idle_deadline(requests_done), requests_done);
    }
    bool has_room() const { return poller_.has_room(); }
    size_t size() const { return poller_.size(); }
    void stop() { poller_.stop(); }

private:
    HttpServer& server_;
    ReadyPoller poller_;
};

Connection* current_connection() { return t_connection; }

void mark_reading_body() {
    if (t_connection) t_connection->phase = ConnectionPhase::body;
}

void mark_answering() {
    if (t_connection) t_connection->phase = ConnectionPhase::answering;
}

HttpServer::HttpServer(ConnectionLimits limits)
    : limits_(limits), overflow_(std::make_unique<OverflowLane>(*this)), idle_(std::make_unique<IdleLane>(*this)) {
    new_task_queue = [this] {
        auto* queue = new LanedTaskQueue(*this, limits_.max_connections);
        std::lock_guard lock(queue_mutex_);
        queue_ = queue;
        return queue;
    };
    // Answers go out as several sends (headers, body, each streamed event).
    // With Nagle's algorithm a send waits for the ACK of the one before, and
    // a client that delays its ACKs (Linux: up to 40 ms once a connection is
    // past its first exchanges) stalls every answer on a kept-alive
    // connection by that much. Set on the listening socket; accepted
    // sockets inherit it.
    set_tcp_nodelay(true);
    // What httplib's Keep-Alive header tells clients (serve() enforces them).
    set_keep_alive_max_count(limits_.max_requests_per_connection);
    set_keep_alive_timeout(std::max<time_t>(1, limits_.idle_timeout.count() / 1000));
}

// Here, where the lanes are complete. Members go in reverse order: idle_
// (declared last), whose poller hands sockets to overflow_, stops first.
HttpServer::~HttpServer() = default;

int HttpServer::bind(const std::string& host, int port) {
    if (port == 0) port = bind_to_any_port(host);
    else if (!bind_to_port(host, port)) port = -1;
    // Listening again only changes the backlog.
    if (port > 0) ::listen(svr_sock_, SOMAXCONN);
    return port;
}

Clock::time_point HttpServer::idle_deadline(size_t requests_done) const {
    return Clock::now() + limits_.idle_timeout + (requests_done > 0 ? kKeepAliveCloseGrace : milliseconds(0));
}

bool HttpServer::wait_for_request(Socket socket, size_t requests_done) const {
    const auto until = idle_deadline(requests_done);
    while (!stopping_) {
        const auto left = std::chrono::duration_cast<milliseconds>(until - Clock::now());
        if (left.count() <= 0) return false;
        // Slices of 100 ms, so a stop is seen within one.
        const int ready = poll_for(socket, POLLIN, std::min(left, milliseconds(100)));
        if (ready != 0) return ready > 0;
    }
    return false;
}

bool HttpServer::process_and_close_socket(socket_t sock) {
    if (t_lane == Lane::overflow) {
        overflow_->add(sock);
        return true;
    }
    return serve(sock, false, 0);
}

void HttpServer::forget_queue() {
    std::lock_guard lock(queue_mutex_);
    queue_ = nullptr;
}

void HttpServer::resume(Socket sock, size_t requests_done) {
    std::lock_guard lock(queue_mutex_);
    if (stopping_ || !queue_) {
        close_socket(sock);
        return;
    }
    if (!queue_->try_main([this, sock, requests_done] { serve(sock, false, requests_done); }))
        overflow_->serve_now(sock, requests_done);
}

bool HttpServer::serve(Socket sock, bool overflow, size_t requests_done, bool may_park) {
    Connection connection;
    connection.socket = sock;
    connection.overflow = overflow;
    {
        std::lock_guard lock(mutex_);
        open_.insert(&connection);
    }
    DeadlineStream stream(connection, limits_);
    // The overflow lane answers one request; the rest up to keep-alive's max.
    const size_t last = overflow ? requests_done + 1 : limits_.max_requests_per_connection;
    bool served = true;
    // Out of the set before the descriptor is parked or closed, so cut()
    // never shuts a number the kernel has given to a newer connection.
    const auto leave_open_set = [&] {
        std::lock_guard lock(mutex_);
        open_.erase(&connection);
    };
    for (size_t done = requests_done; done < last && served && !stopping_; ++done) {
        // The poller delivered it readable, or its bytes are in the stream.
        const bool request_here = overflow || stream.has_buffered() || poll_for(sock, POLLIN, milliseconds(0)) != 0;
        if (!request_here) {
            if (may_park) {
                leave_open_set();
                if (idle_->park(sock, done)) return served;
                std::lock_guard lock(mutex_);  // the idle lane is full: wait here
                open_.insert(&connection);
            }
            if (!wait_for_request(sock, done)) break;
        }
        connection.phase = ConnectionPhase::head;
        stream.start_request(Clock::now() + (connection.overflow ? kOverflowRequestTimeout : limits_.request_timeout));
        bool closed = false;
        t_connection = &connection;
        // The last answer a connection gets says `Connection: close`: the
        // keep-alive maximum, a stop, or no room to wait idle.
        const bool close_after = done + 1 == last || stopping_ || (may_park && !overflow && !idle_->has_room());
        served = process_request(stream, close_after, closed, nullptr);
        t_connection = nullptr;
        const bool held_much = connection.memory && connection.memory->bytes() >= kTrimAfterBytes;
        connection.memory.reset();
        if (held_much) return_free_memory();
        connection.phase = ConnectionPhase::waiting;
        if (closed || close_after || connection.close_after_response || connection.timed_out || connection.head_too_large)
            break;
    }
    leave_open_set();
    shutdown_socket(sock);
    close_socket(sock);
    return served;
}

void HttpServer::cut(ConnectionPhase up_to) {
    std::lock_guard lock(mutex_);
    for (Connection* connection : open_)
        if (connection->phase.load() <= up_to) shutdown_socket(connection->socket);
}

void HttpServer::stop_reading() {
    stopping_ = true;
    idle_->stop();  // closes the connections waiting for a request
    cut(ConnectionPhase::body);
}

void HttpServer::cut_all() { cut(ConnectionPhase::answering); }

size_t HttpServer::open_connections() const {
    const size_t idle = idle_->size();
    std::lock_guard lock(mutex_);
    return open_.size() + idle;
}

}  // namespace waste_serve
