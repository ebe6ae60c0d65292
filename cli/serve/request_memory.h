// request_memory.h — what requests hold outside the model's memory plan:
// bodies, their parsed JSON, the rendered prompt and its tokens, images as
// bytes, answers being built. One pool of --request-memory bytes (shown by
// `waste plan --parallel N --queue M` and on the server's start line), so
// that the budget plus the pool is the server's ceiling.
//
// A request reserves its declared body (times the copies it makes, below)
// before the body is read, and grows its reservation before each larger
// allocation it causes. What would pass the pool is refused before it is
// made: 413 when the request alone could never fit, 503 with Retry-After
// while other requests hold the memory. Queued requests keep their
// reservation, so a queue of big bodies is counted, not piled up.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>

namespace waste_serve {

class RequestMemory {
public:
    explicit RequestMemory(uint64_t capacity) : capacity_(capacity) {}
    RequestMemory(const RequestMemory&) = delete;
    RequestMemory& operator=(const RequestMemory&) = delete;

    class Reservation {
    public:
        Reservation(RequestMemory* pool, uint64_t bytes) : pool_(pool), bytes_(bytes) {}
        Reservation(Reservation&& other) noexcept;
        Reservation& operator=(Reservation&&) = delete;
        ~Reservation();
        // Adds bytes for what (named in the refusal), or throws ApiError:
        // 413 when this request would hold more than the whole pool, 503
        // while others hold what it needs.
        void grow(uint64_t bytes, const std::string& what);
        // Gives back bytes it no longer holds (at most what it has).
        void shrink(uint64_t bytes);
        uint64_t bytes() const { return bytes_; }
        // The most this request may grow by (it holds the whole pool then).
        uint64_t headroom() const { return pool_->capacity() - bytes_; }

    private:
        RequestMemory* pool_;
        uint64_t bytes_;
    };

    // A reservation of bytes, or nullopt when they do not fit now.
    std::optional<Reservation> reserve(uint64_t bytes);
    uint64_t capacity() const { return capacity_; }
    uint64_t in_use() const { return in_use_.load(); }
    uint64_t peak() const { return peak_.load(); }

private:
    bool take(uint64_t bytes);
    void give(uint64_t bytes) { in_use_ -= bytes; }

    const uint64_t capacity_;
    std::atomic<uint64_t> in_use_{0};
    std::atomic<uint64_t> peak_{0};
};

// Returns the heap's free pages to the system. A request that held more
// than kTrimAfterBytes calls it when it ends: the allocator keeps what a
// thread freed in that thread's arena, so without it the resident set
// grows toward the sum of each worker's peak rather than the pool.
constexpr uint64_t kTrimAfterBytes = uint64_t{8} << 20;
void return_free_memory();

// The estimates a request reserves by (request_memory.cpp states each).
// Before its body is read: the body (read into a string of its declared
// length, http_server.cpp's post_endpoint) and a fixed part for the
// request's small objects.
uint64_t body_reservation(uint64_t content_length);

}  // namespace waste_serve
