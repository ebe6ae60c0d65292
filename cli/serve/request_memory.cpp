// request_memory.cpp — see request_memory.h.
#include "request_memory.h"

#include <algorithm>

#include <fmt/format.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "api_error.h"

namespace waste_serve {

namespace {

// The request's small objects besides its body: headers, the job, sampling
// state, the response's envelope. Why 256 KiB: the head alone may be 64 KiB
// (http_connections.h), and the rest is a few KiB.
constexpr uint64_t kFixedRequestBytes = 256 << 10;

std::string mib(uint64_t bytes) { return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1 << 20)); }

}  // namespace

void return_free_memory() {
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
}

uint64_t body_reservation(uint64_t content_length) { return content_length + kFixedRequestBytes; }

RequestMemory::Reservation::Reservation(Reservation&& other) noexcept : pool_(other.pool_), bytes_(other.bytes_) {
    other.pool_ = nullptr;
    other.bytes_ = 0;
}

RequestMemory::Reservation::~Reservation() {
    if (pool_) pool_->give(bytes_);
}

void RequestMemory::Reservation::grow(uint64_t bytes, const std::string& what) {
    if (bytes == 0) return;
    if (bytes_ + bytes > pool_->capacity_)
        throw ApiError{413,
                       fmt::format("{} needs {} more, and this request would then hold {}: more than the server's request memory "
                                   "(--request-memory {}); send a smaller request",
                                   what, mib(bytes), mib(bytes_ + bytes), mib(pool_->capacity_)),
                       "invalid_request_error", "", "request_too_large"};
    if (!pool_->take(bytes))
        throw ApiError{503,
                       fmt::format("{} needs {} of request memory, which other requests hold ({} of {} in use); retry shortly", what,
                                   mib(bytes), mib(pool_->in_use()), mib(pool_->capacity_)),
                       "unavailable_error", "", "server_busy"};
    bytes_ += bytes;
}

void RequestMemory::Reservation::shrink(uint64_t bytes) {
    bytes = std::min(bytes, bytes_);
    pool_->give(bytes);
    bytes_ -= bytes;
}

std::optional<RequestMemory::Reservation> RequestMemory::reserve(uint64_t bytes) {
    if (!take(bytes)) return std::nullopt;
    return Reservation(this, bytes);
}

bool RequestMemory::take(uint64_t bytes) {
    uint64_t used = in_use_.load();
    do {
        if (bytes > capacity_ || used > capacity_ - bytes) return false;
    } while (!in_use_.compare_exchange_weak(used, used + bytes));
    uint64_t peak = peak_.load();
    while (used + bytes > peak && !peak_.compare_exchange_weak(peak, used + bytes)) {
    }
    return true;
}

}  // namespace waste_serve
