// metrics.h — the server's counters, served as Prometheus text on
// GET /metrics: requests by outcome, tokens, tok/s, the expert cache's hit
// rate, bytes read, the queue, and the disconnect counter (with the token
// counter, a test checks that a client that went away stopped its
// generation within a token).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

namespace waste_serve {

struct Metrics {
    std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
    std::atomic<uint64_t> requests{0};            // every HTTP request routed to an endpoint
    std::atomic<uint64_t> requests_ok{0};         // generations that completed
    std::atomic<uint64_t> requests_error{0};      // 4xx/5xx answers
    std::atomic<uint64_t> requests_rejected{0};   // 503: the queue was full
    std::atomic<uint64_t> prompt_tokens{0};       // prompt tokens of generations
    std::atomic<uint64_t> prefilled_tokens{0};    // of those, evaluated (not resumed from a snapshot)
    std::atomic<uint64_t> generated_tokens{0};
    std::atomic<uint64_t> generation_nanoseconds{0};
    std::atomic<uint64_t> expert_hits{0};
    std::atomic<uint64_t> expert_misses{0};
    std::atomic<uint64_t> bytes_read{0};
    std::atomic<uint64_t> prefetched{0};          // lookahead reads issued
    std::atomic<uint64_t> prefetch_used{0};       // demand hits on a record lookahead read (in expert_hits)
    std::atomic<uint64_t> prefetch_late{0};       // of those, still in flight when asked for
    std::atomic<uint64_t> prefetch_wasted{0};     // lookahead records evicted before any use
    std::atomic<uint64_t> disconnects{0};          // generations whose client went away
    // Tokens of streams that reached the client's socket; generated minus
    // this is what was generated for clients already gone (a stream that
    // stops within a token of its client leaving adds at most 2: the token
    // whose write the kernel still took, and the one whose write failed).
    std::atomic<uint64_t> stream_tokens_sent{0};
    std::atomic<uint64_t> decode_batches{0};      // batched decode steps run (batch_stepper.h)
    std::atomic<uint64_t> decode_batch_rows{0};   // the streams' steps they evaluated
    std::atomic<uint64_t> prompt_cache_hits{0};
    std::atomic<uint64_t> prompt_cache_tokens_reused{0};
    std::atomic<int64_t> active{0};                // generations holding a slot
    std::atomic<int64_t> queued{0};                // admitted, waiting for a slot

    std::string prometheus_text() const;
};

// One metric in Prometheus' text format: waste_NAME, its help and type.
std::string prometheus_metric(const char* name, const char* type, const char* help, double value);

}  // namespace waste_serve
