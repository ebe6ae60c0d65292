#include "metrics.h"

#include <fmt/format.h>

namespace waste_serve {

std::string prometheus_metric(const char* name, const char* type, const char* help, double value) {
    return fmt::format("# HELP waste_{} {}\n# TYPE waste_{} {}\nwaste_{} {}\n", name, help, name, type, name, value);
}

std::string Metrics::prometheus_text() const {
    std::string out;
    auto metric = [&out](const char* name, const char* type, const char* help, double value) {
        out += prometheus_metric(name, type, help, value);
    };
    const double seconds = generation_nanoseconds.load() / 1e9;
    const double lookups = static_cast<double>(expert_hits.load() + expert_misses.load());
    metric("requests_total", "counter", "HTTP requests routed to an endpoint", requests.load());
    metric("requests_completed_total", "counter", "Generations that completed", requests_ok.load());
    metric("requests_errors_total", "counter", "Requests answered with a 4xx or 5xx error", requests_error.load());
    metric("requests_rejected_total", "counter", "Requests refused with 503 because the queue was full", requests_rejected.load());
    metric("prompt_tokens_total", "counter", "Prompt tokens of generations", prompt_tokens.load());
    metric("prefilled_tokens_total", "counter", "Prompt tokens evaluated (not resumed from a stored prompt)", prefilled_tokens.load());
    metric("generated_tokens_total", "counter", "Tokens generated", generated_tokens.load());
    metric("generation_seconds_total", "counter", "Time spent generating (prefill and decode)", seconds);
    metric("tokens_per_second", "gauge", "Generated tokens per second of generation time", seconds > 0 ? generated_tokens.load() / seconds : 0);
    metric("expert_hits_total", "counter", "Expert lookups served from the cache", expert_hits.load());
    metric("expert_misses_total", "counter", "Expert lookups read from disk", expert_misses.load());
    metric("expert_hit_rate", "gauge", "Expert lookups served from the cache, lookahead's reads included (0 when nothing was looked up)",
           lookups > 0 ? expert_hits.load() / lookups : 0);
    metric("expert_cache_hit_rate", "gauge", "Expert lookups the cache held without lookahead's help (0 when nothing was looked up)",
           lookups > 0 ? (expert_hits.load() - prefetch_used.load()) / lookups : 0);
    metric("lookahead_reads_total", "counter", "Expert reads issued ahead by router lookahead", prefetched.load());
    metric("lookahead_used_total", "counter", "Lookahead reads a lookup then used", prefetch_used.load());
    metric("lookahead_late_total", "counter", "Used lookahead reads still in flight when looked up (the lookup waited)",
           prefetch_late.load());
    metric("lookahead_wasted_total", "counter", "Lookahead reads evicted before any use", prefetch_wasted.load());
    metric("bytes_read_total", "counter", "Bytes of expert records read", bytes_read.load());
    metric("client_disconnects_total", "counter", "Generations whose client went away before the answer was complete", disconnects.load());
    metric("stream_tokens_sent_total", "counter", "Streamed tokens whose chunk was written to the client's socket",
           stream_tokens_sent.load());
    metric("decode_batches_total", "counter", "Batched decode steps: each reads an expert once for every stream that chose it",
           decode_batches.load());
    metric("decode_batch_rows_total", "counter", "Streams' decode steps evaluated in those batches (rows / batches: the mean batch)",
           decode_batch_rows.load());
    metric("prompt_cache_hits_total", "counter", "Requests resumed from a stored prompt", prompt_cache_hits.load());
    metric("prompt_cache_tokens_reused_total", "counter", "Prompt tokens not prefilled thanks to a stored prompt",
           prompt_cache_tokens_reused.load());
    metric("requests_active", "gauge", "Generations holding a slot", active.load());
    metric("queue_depth", "gauge", "Requests waiting for a slot", queued.load());
    metric("uptime_seconds", "gauge", "Seconds since the server started",
           std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    return out;
}

}  // namespace waste_serve
