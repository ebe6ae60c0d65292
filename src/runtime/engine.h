// engine.h — a loaded model ready to run: trunk weights, the compute pool,
// the expert cache sized by the memory plan. Sessions (conversations) run on
// it one call at a time.
//
// Owns what is shared by sessions; a Session owns only its state. Not here:
// sampling and text (later layers), the file formats (format/).
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "format/container.h"
#include "model/forward.h"
#include "model/weights.h"
#include "platform/thread_pool.h"
#include "runtime/expert_cache.h"
#include "runtime/image_queue.h"
#include "runtime/memory_plan.h"
#include "runtime/route_log.h"
#include "runtime/session_snapshot.h"

namespace waste::runtime {

struct EngineOptions {
    unsigned threads = 0;   // 0 = one per core
    CachePolicyKind cache_policy = default_cache_policy;
    ExpertIo io = ExpertIo::automatic;
    kernels::VqLutMode lut = kernels::VqLutMode::exact;  // decode's expert tables (kernels/vq_lut.h)
};

// Router lookahead's default: upstream measured 81% precision in the top 6
// (docs/anchors.md).
constexpr uint32_t default_lookahead = 6;
// MoE layers ahead a decode step predicts (Session::set_lookahead_layers).
constexpr uint32_t default_lookahead_layers = 1;
constexpr uint32_t max_lookahead_layers = 4;

struct TokenStats {
    uint64_t tokens = 0;
    uint64_t expert_hits = 0, expert_misses = 0, bytes_read = 0;
    double io_seconds = 0, compute_seconds = 0;
    uint64_t prefetched = 0, prefetch_used = 0, prefetch_bytes = 0;
    uint64_t prefetch_late = 0, prefetch_wasted = 0;
    void add(const TokenStats& other);
};

class Engine {
public:
    Engine(const format::Container& container, const MemoryPlan& plan, const EngineOptions& options);

    const format::Container& container() const { return container_; }
    const format::ModelConfig& config() const { return container_.config(); }
    const model::ModelWeights& weights() const { return weights_; }
    platform::ThreadPool& pool() { return pool_; }
    ExpertCache& cache() { return cache_; }
    unsigned threads() const { return pool_.size(); }
    // Reads experts into the cache, layer by layer, until it is full (or all
    // are in), and in the int8 mode decodes them into decoded() while it has
    // room; returns how many records it holds.
    uint64_t warm_cache();
    // Reads the given records into the cache, in order, until it is full;
    // returns how many it holds (the learned hotlist warms this way).
    uint64_t warm_cache(std::span<const CacheKey> order);
    // Demand lookups per (MoE layer, expert) since open, for the hotlist:
    // [moe layer ordinal][experts], ordinals as in container banks' order.
    std::vector<uint64_t>& usage() { return usage_; }
    kernels::VqLutMode lut_mode() const { return lut_; }
    // The int8 mode's decoded experts (model/decoded_experts.h), sized by the plan.
    model::DecodedExperts& decoded() { return decoded_; }
    // The int8 mode's codebooks in integers, one per codebook record of the
    // container (kernels/vq_lut.h, build_vq_table_int8); empty otherwise.
    const std::vector<kernels::VqInt8Book>& int8_books() const { return int8_books_; }
    // The plan's prefill chunk: the tokens each session's workspace holds.
    uint32_t prefill_chunk() const { return prefill_chunk_; }
    // The rows a batched decode step takes at once (batch_table_rows of the plan's sessions).
    uint32_t batch_rows() const { return batch_rows_; }
    // A forward pass's context over this engine's weights, pool and mode,
    // reading experts from `experts` into `workspace` (no optional outputs).
    model::ForwardContext forward_context(model::ExpertProvider& experts, model::Workspace& workspace);

private:
    const format::Container& container_;
    model::ModelWeights weights_;
    platform::ThreadPool pool_;
    ExpertCache cache_;
    std::vector<uint64_t> usage_;
    kernels::VqLutMode lut_ = kernels::VqLutMode::exact;
    uint32_t prefill_chunk_ = model::min_planned_chunk;
    uint32_t batch_rows_ = 1;
    model::DecodedExperts decoded_;
    std::vector<kernels::VqInt8Book> int8_books_;
};

class Session {
public:
    Session(Engine& engine, uint32_t context_length);

    // Appends tokens, in chunks of up to chunk_tokens (1 = token by token;
    // at most, and by default, the engine's prefill chunk);
    // afterwards logits() are the next-token logits. With hidden non-null it
    // receives [layers+1][count][H]: the embeddings and each layer's output.
    // With next_logprobs non-null, next_logprobs[i] (i < count - 1) receives
    // log p(tokens[i+1] | the session's tokens and tokens[0..i]) (natural
    // log, model::token_logprob); logits() end up exactly as without it.
    void eval(const int32_t* tokens, size_t count, float* hidden = nullptr, double* next_logprobs = nullptr);
    // A batched decode step (model::forward_batch): tokens[i] is appended to
    // sessions[i]; the sessions are distinct, of one engine, none with image
    // rows queued. Evaluated in groups of up to the engine's batch_rows(), in
    // the first session's workspace; each group reads each distinct expert
    // once. Lookahead: the largest any session asks.
    // Each session's stats get one token and an equal share of the group's
    // reads and time (shares that add up to the group's). Refused before
    // anything runs when any session or token is bad (naming its index); a
    // failure while running resets the group's sessions, as eval's does.
    static void eval_batch(std::span<Session* const> sessions, const int32_t* tokens);
    // eval_batch's refusals alone: throws what it would refuse, runs nothing.
    static void check_batch(std::span<Session* const> sessions, const int32_t* tokens);
    void set_chunk_tokens(size_t chunk_tokens);
    const std::vector<float>& logits() const { return workspace_.logits; }
    uint32_t position() const { return state_.position; }
    uint32_t context_length() const { return state_.context_length; }
    void reset();
    const TokenStats& stats() const { return stats_; }
    // The counters of the most recent eval call (one decode token, or one
    // prompt).
    const TokenStats& last_stats() const { return last_stats_; }
    // Router lookahead: experts prefetched per MoE layer for each token (0 = off).
    void set_lookahead(uint32_t experts) { lookahead_ = experts; }
    uint32_t lookahead() const { return lookahead_; }
    // MoE layers ahead a decode step predicts from one state, each its top
    // lookahead() (1 to max_lookahead_layers).
    void set_lookahead_layers(uint32_t layers) { lookahead_layers_ = layers; }
    uint32_t lookahead_layers() const { return lookahead_layers_; }
    // When set, each token's routing is appended (one entry per layer).
    // Profiling: where the time of each evaluated chunk goes.
    void set_profiling(bool on) { profiling_ = on; }
    const model::Profile& profile() const { return profile_; }
    void record_routes(std::vector<std::vector<model::RouteChoice>>* sink) { route_sink_ = sink; }
    // --dump-route: each evaluated token's routing to a JSON-lines file
    // (runtime/route_log.h); null stops.
    // The previous dump is published first (RouteLog::finish); its failure
    // is thrown and the new log is not installed.
    void set_route_log(std::unique_ptr<RouteLog> log) {
        if (std::unique_ptr<RouteLog> previous = std::move(route_log_)) previous->finish();
        route_log_ = std::move(log);
    }
    // The session state file (model/session_file.h, session_persist.cpp).
    // load_state recomputes the logits from the saved residual stream; a
    // refused file leaves the session reset.
    void save_state(const std::string& path) const;
    void load_state(const std::string& path);
    // In-RAM copies (runtime/session_snapshot.h, session_persist.cpp): restore
    // gives back exactly the snapshotted state and logits. A snapshot of
    // another model's shape is WASTE_ERR_INVALID_ARGUMENT and leaves the
    // session as it was; restore allocates nothing, so it cannot fail half-way.
    SessionSnapshot snapshot() const;
    void restore(const SessionSnapshot& snapshot);
    // Images (vision.md §4, runtime/image_queue.h): off until enabled; then
    // eval splices the queued rows at pad positions and reset clears them.
    void enable_images(int32_t pad, size_t max_rows) { images_.emplace(engine_.config().hidden, pad, max_rows); }
    ImageQueue* images() { return images_ ? &*images_ : nullptr; }
    const ImageQueue* images() const { return images_ ? &*images_ : nullptr; }
    platform::ThreadPool& pool() { return engine_.pool(); }

private:
    Engine& engine_;
    model::SessionState state_;
    model::Workspace workspace_;
    TokenStats stats_, last_stats_;
    uint32_t lookahead_ = default_lookahead;
    uint32_t lookahead_layers_ = default_lookahead_layers;
    size_t chunk_tokens_ = 1;  // the engine's prefill chunk once constructed
    bool profiling_ = false;
    model::Profile profile_;
    std::vector<std::vector<model::RouteChoice>>* route_sink_ = nullptr;
    std::unique_ptr<RouteLog> route_log_;
    std::optional<ImageQueue> images_;
};

}  // namespace waste::runtime
