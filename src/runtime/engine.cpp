#include "runtime/engine.h"

#include <cstring>

#include "model/moe_experts.h"
#include "platform/error.h"

namespace waste::runtime {
namespace {

// Serves records from the engine's cache and counts each demand lookup for
// the learned hotlist. A layer's records stay pinned until the layer is done.
// The lookahead predictions made at layer L's post-attention state (the next
// MoE layer's, and in decode the ones after it, nearest first) are held
// until layer L's own demand reads are submitted, so speculative reads queue
// behind the reads the next computation waits for, and run during L's MoE
// and the layers after it.
class CachedExperts final : public model::ExpertProvider {
public:
    CachedExperts(ExpertCache& cache, std::vector<uint64_t>& usage, const format::ModelConfig& config, uint32_t lookahead,
                  uint32_t lookahead_layers)
        : cache_(cache), usage_(usage), config_(config), experts_(config.experts), lookahead_(lookahead),
          lookahead_layers_(lookahead_layers), top_k_(config.top_k) {}
    void request(int layer, std::span<const int> experts) override {
        for (int e : experts)
            if (e >= 0 && e < experts_) ++usage_[static_cast<size_t>(layer) * experts_ + e];
        // a prediction for this very layer is moot now
        std::erase_if(pending_, [&](const Prediction& p) { return p.layer == layer; });
        cache_.request(layer, experts);
        flush_prefetch(experts.size());
    }
    bool next_ready(std::vector<Ready>* out) override {
        ready_.clear();
        const bool any = cache_.next_ready(&ready_);
        for (const ReadyRecord& r : ready_) out->push_back(Ready{r.index, r.record});
        return any;
    }
    void release_layer(int layer) override {
        cache_.release(layer);
        flush_prefetch(0);
    }
    size_t max_pinned() const override { return cache_.available(); }
    size_t lookahead() const override { return cache_.io() == ExpertIo::sync ? 0 : lookahead_; }
    int lookahead_layers() const override { return static_cast<int>(lookahead_layers_); }
    void prefetch(int layer, std::span<const int> experts) override {
        // predictions no demand request flushed, made at an earlier layer
        if (!pending_.empty() && pending_.back().layer >= layer) flush_prefetch(0);
        pending_.push_back(Prediction{layer, std::vector<int>(experts.begin(), experts.end())});
        // after a dense layer there is no demand to queue behind: issue now
        if (!config_.is_moe_layer(pending_.front().layer - 1)) flush_prefetch(0);
    }

private:
    struct Prediction {
        int layer;
        std::vector<int> experts;  // best first
    };
    // After this layer releases its `held` records the next layer's demand
    // needs top_k slots: the prefetch keeps that many available.
    void flush_prefetch(size_t held) {
        const uint64_t reserve = held >= static_cast<size_t>(top_k_) ? 0 : static_cast<uint64_t>(top_k_) - held;
        for (const Prediction& p : pending_) cache_.prefetch(p.layer, p.experts, reserve);
        pending_.clear();
    }

    ExpertCache& cache_;
    std::vector<uint64_t>& usage_;
    const format::ModelConfig& config_;
    int experts_;
    uint32_t lookahead_;
    uint32_t lookahead_layers_;
    int top_k_;
    std::vector<Prediction> pending_;  // nearest layer first
    std::vector<ReadyRecord> ready_;
};

// share i of n of a count: the shares of 0..n-1 sum to count exactly.
uint64_t share(uint64_t count, size_t i, size_t n) { return count * (i + 1) / n - count * i / n; }

// One of n equal shares of a batch's counters (share i): each session of a
// batched step is charged its part, and the parts add up to the whole.
TokenStats share_of(const TokenStats& whole, size_t i, size_t n) {
    TokenStats part;
    part.expert_hits = share(whole.expert_hits, i, n);
    part.expert_misses = share(whole.expert_misses, i, n);
    part.bytes_read = share(whole.bytes_read, i, n);
    part.prefetched = share(whole.prefetched, i, n);
    part.prefetch_used = share(whole.prefetch_used, i, n);
    part.prefetch_bytes = share(whole.prefetch_bytes, i, n);
    part.prefetch_late = share(whole.prefetch_late, i, n);
    part.prefetch_wasted = share(whole.prefetch_wasted, i, n);
    part.io_seconds = whole.io_seconds / static_cast<double>(n);
    part.compute_seconds = whole.compute_seconds / static_cast<double>(n);
    return part;
}

TokenStats delta(const ExpertCacheStats& after, const ExpertCacheStats& before) {
    TokenStats d;
    d.expert_hits = after.hits - before.hits;
    d.expert_misses = after.misses - before.misses;
    d.bytes_read = after.bytes_read - before.bytes_read;
    d.io_seconds = after.read_seconds - before.read_seconds;
    d.prefetched = after.prefetched - before.prefetched;
    d.prefetch_used = after.prefetch_used - before.prefetch_used;
    d.prefetch_bytes = after.prefetch_bytes - before.prefetch_bytes;
    d.prefetch_late = after.prefetch_late - before.prefetch_late;
    d.prefetch_wasted = after.prefetch_wasted - before.prefetch_wasted;
    return d;
}

}  // namespace

void TokenStats::add(const TokenStats& o) {
    tokens += o.tokens;
    expert_hits += o.expert_hits;
    expert_misses += o.expert_misses;
    bytes_read += o.bytes_read;
    io_seconds += o.io_seconds;
    compute_seconds += o.compute_seconds;
    prefetched += o.prefetched;
    prefetch_used += o.prefetch_used;
    prefetch_bytes += o.prefetch_bytes;
    prefetch_late += o.prefetch_late;
    prefetch_wasted += o.prefetch_wasted;
}

Engine::Engine(const format::Container& container, const MemoryPlan& plan, const EngineOptions& options)
    : container_(container), weights_(model::bind_weights(container)), pool_(options.threads),
      cache_(container, std::max<uint64_t>(plan.cache_records, 2ull * container.config().top_k), options.cache_policy,
             options.io, plan.io_depth),
      usage_(container.has_experts() ? static_cast<size_t>(container.config().layers) * container.config().experts : 0, 0),
      lut_(options.lut), prefill_chunk_(std::max(plan.prefill_chunk, 1u)), batch_rows_(batch_table_rows(plan.sessions)), decoded_(options.lut == kernels::VqLutMode::int8 ? plan.decoded_bytes : 0) {
    if (lut_ == kernels::VqLutMode::int8 && container.has_experts()) int8_books_ = model::int8_codebooks(container);
}

uint64_t Engine::warm_cache() {
    std::vector<CacheKey> order;
    for (const auto& [layer, bank] : container_.manifest().banks)
        for (uint32_t e = 0; e < bank.experts && order.size() < cache_.slots(); ++e) order.push_back(CacheKey{layer, static_cast<int>(e)});
    return warm_cache(order);
}

uint64_t Engine::warm_cache(std::span<const CacheKey> order) {
    uint64_t loaded = 0;
    for (const CacheKey& key : order) {
        if (loaded >= cache_.slots()) break;
        try {
            const std::span<const uint8_t> record = cache_.acquire(key.layer, key.expert);
            // the int8 mode decodes what it will hold for prefill too (model/decoded_experts.h)
            if (lut_ == kernels::VqLutMode::int8)
                decoded_.hold(pool_, model::layer_expert_books(container_, key.layer), container_.expert_layout(), key.layer,
                              key.expert, record.data(), config().expert_input(), config().moe_intermediate);
            cache_.release(key.layer);
        } catch (...) {
            cache_.abandon();
            throw;
        }
        ++loaded;
    }
    cache_.reset_stats();
    return loaded;
}

Session::Session(Engine& engine, uint32_t context_length)
    : engine_(engine), state_(engine.config(), context_length),
      workspace_(engine.config(), engine.container(), engine.threads(), engine.prefill_chunk(), engine.batch_rows()),
      chunk_tokens_(engine.prefill_chunk()) {
    if (engine.lut_mode() == kernels::VqLutMode::int8) workspace_.enable_int8_tables(engine.container());
}

void Session::set_chunk_tokens(size_t chunk_tokens) {
    if (chunk_tokens < 1 || chunk_tokens > workspace_.chunk_tokens)
        fail(WASTE_ERR_INVALID_ARGUMENT, "prefill chunk of {} tokens is out of range [1, {}] (the model's planned chunk; "
             "open it with a larger prefill chunk)", chunk_tokens, workspace_.chunk_tokens);
    chunk_tokens_ = chunk_tokens;
}

void Session::eval(const int32_t* tokens, size_t count, float* hidden, double* next_logprobs) {
    if (count == 0) fail(WASTE_ERR_INVALID_ARGUMENT, "eval: no tokens");
    if (state_.position + count > state_.context_length)
        fail(WASTE_ERR_CONTEXT_FULL, "{} tokens after {} exceed the context length {}; reset the session or open with a larger --ctx",
             count, state_.position, state_.context_length);
    const format::ModelConfig& c = engine_.config();
    CachedExperts experts(engine_.cache(), engine_.usage(), c, lookahead_, lookahead_layers_);
    std::vector<std::vector<model::RouteChoice>> routes;
    const bool want_routes = route_sink_ || route_log_;
    last_stats_ = TokenStats{};
    std::vector<float> chunk_hidden;
    model::ForwardContext ctx = engine_.forward_context(experts, workspace_);
    ctx.routes = want_routes ? &routes : nullptr;
    ctx.profile = profiling_ ? &profile_ : nullptr;
    // Queued image rows are spliced at pad positions; the queue is cleared
    // after an evaluation that used a row, finished or failed.
    ctx.splice = images_ ? images_->begin_eval() : nullptr;
    struct FinishImages {
        ImageQueue* queue;
        ~FinishImages() {
            if (queue) queue->finish_eval();
        }
    } finish_images{images()};
    for (size_t done = 0; done < count;) {
        const size_t n = std::min(chunk_tokens_, count - done);
        if (hidden) {
            chunk_hidden.assign((c.layers + 1) * n * c.hidden, 0.0f);
            ctx.hidden = chunk_hidden.data();
        }
        if (next_logprobs) {  // a chunk's last row scores the next chunk's first token
            ctx.next_tokens = tokens + done + 1;
            ctx.next_logprobs = next_logprobs + done;
            ctx.scored_rows = std::min(n, count - 1 - done);
        }
        const ExpertCacheStats before = engine_.cache().stats();
        const auto start = std::chrono::steady_clock::now();
        try {
            if (profiling_) profile_.start();
            model::forward_chunk(ctx, state_, tokens + done, n);
            if (profiling_) profile_.stop();
        } catch (...) {
            if (profiling_) profile_.stop();
            // A chunk that failed half-way left the state inconsistent: the
            // session starts over rather than continue from it. Reads still
            // in flight are waited for and failed slots forgotten.
            engine_.cache().abandon();
            state_.reset();
            throw;
        }
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        TokenStats chunk = delta(engine_.cache().stats(), before);
        chunk.tokens = n;
        chunk.compute_seconds = seconds - chunk.io_seconds;
        stats_.add(chunk);
        last_stats_.add(chunk);
        if (route_log_) route_log_->write(c, state_.position - static_cast<uint32_t>(n), routes);
        if (route_sink_)
            for (auto& token_routes : routes) route_sink_->push_back(std::move(token_routes));
        if (hidden)  // chunk layout [slot][n][H] into the caller's [slot][count][H]
            for (int slot = 0; slot <= c.layers; ++slot)
                std::memcpy(hidden + (static_cast<size_t>(slot) * count + done) * c.hidden,
                            chunk_hidden.data() + static_cast<size_t>(slot) * n * c.hidden, sizeof(float) * n * c.hidden);
        done += n;
    }
}

void Session::check_batch(std::span<Session* const> sessions, const int32_t* tokens) {
    if (sessions.empty()) fail(WASTE_ERR_INVALID_ARGUMENT, "a batched step of no sessions");
    Engine& engine = sessions.front()->engine_;
    const format::ModelConfig& c = engine.config();
    for (size_t i = 0; i < sessions.size(); ++i) {
        Session& s = *sessions[i];
        if (&s.engine_ != &engine) fail(WASTE_ERR_INVALID_ARGUMENT, "session {} of the batch belongs to another model", i);
        for (size_t j = 0; j < i; ++j)
            if (sessions[j] == sessions[i]) fail(WASTE_ERR_INVALID_ARGUMENT, "session {} of the batch is session {} again", i, j);
        if (s.state_.position + 1 > s.state_.context_length)
            fail(WASTE_ERR_CONTEXT_FULL, "session {} of the batch holds {} of {} tokens; reset it or open with a larger --ctx", i,
                 s.state_.position, s.state_.context_length);
        if (tokens[i] < 0 || tokens[i] >= c.vocab)
            fail(WASTE_ERR_INVALID_ARGUMENT, "token {} of the batch, id {}, is outside the vocabulary of {}", i, tokens[i], c.vocab);
        if (s.images_ && s.images_->rows() > 0)
            fail(WASTE_ERR_INVALID_ARGUMENT, "session {} of the batch has queued image rows: evaluate its prompt alone", i);
    }
}

void Session::eval_batch(std::span<Session* const> sessions, const int32_t* tokens) {
    check_batch(sessions, tokens);
    Engine& engine = sessions.front()->engine_;
    const format::ModelConfig& c = engine.config();
    // Groups of up to the engine's batch rows, in the first session's workspace.
    Session& first = *sessions.front();
    const size_t group = std::min<size_t>(engine.batch_rows(), first.workspace_.table_rows);
    uint32_t lookahead = 0;
    uint32_t lookahead_layers = 1;
    for (const Session* s : sessions) {
        lookahead = std::max(lookahead, s->lookahead_);
        lookahead_layers = std::max(lookahead_layers, s->lookahead_layers_);
    }
    for (size_t done = 0; done < sessions.size(); done += group) {
        const size_t n = std::min(group, sessions.size() - done);
        const std::span<Session* const> members = sessions.subspan(done, n);
        CachedExperts experts(engine.cache(), engine.usage(), c, lookahead, lookahead_layers);
        std::vector<std::vector<model::RouteChoice>> routes;
        bool want_routes = false;
        std::vector<model::SessionState*> states;
        std::vector<float*> logits;
        for (Session* s : members) {
            want_routes = want_routes || s->route_sink_ || s->route_log_;
            states.push_back(&s->state_);
            logits.push_back(s->workspace_.logits.data());
        }
        model::ForwardContext ctx = engine.forward_context(experts, first.workspace_);
        ctx.routes = want_routes ? &routes : nullptr;
        const ExpertCacheStats before = engine.cache().stats();
        const auto start = std::chrono::steady_clock::now();
        try {
            model::forward_batch(ctx, states, logits, tokens + done);
        } catch (...) {
            // As in eval: states a failed step left half-way start over.
            engine.cache().abandon();
            for (Session* s : members) s->state_.reset();
            throw;
        }
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        TokenStats whole = delta(engine.cache().stats(), before);
        whole.compute_seconds = seconds - whole.io_seconds;
        for (size_t i = 0; i < n; ++i) {
            Session& s = *members[i];
            TokenStats part = share_of(whole, i, n);
            part.tokens = 1;
            s.stats_.add(part);
            s.last_stats_ = part;
            if (!want_routes) continue;
            std::vector<std::vector<model::RouteChoice>> mine{std::move(routes[i])};
            if (s.route_log_) s.route_log_->write(c, s.state_.position - 1, mine);
            if (s.route_sink_) s.route_sink_->push_back(std::move(mine.front()));
        }
    }
}

model::ForwardContext Engine::forward_context(model::ExpertProvider& experts, model::Workspace& workspace) {
    const format::ModelConfig& c = config();
    model::ForwardContext ctx{container_, c, weights_, pool_, experts, workspace,
                              kernels::GluActivation{c.activation == format::Activation::situ, static_cast<float>(c.situ_beta),
                                                     static_cast<float>(c.situ_linear_beta),
                                                     c.activation == format::Activation::clamped_swiglu
                                                         ? static_cast<float>(c.swiglu_limit)
                                                         : 0.0f}};
    ctx.lut = lut_;
    if (ctx.lut == kernels::VqLutMode::int8) {
        ctx.decoded = &decoded_;
        ctx.int8_books = int8_books_.data();
    }
    return ctx;
}

void Session::reset() {
    state_.reset();
    if (images_) images_->clear();
}

}  // namespace waste::runtime
