#include "runtime/engine.h"

#include <cstring>

#include "platform/error.h"

namespace waste::runtime {
namespace {

// Serves records from the engine's cache; a layer's records stay pinned
// until the layer is done with them.
class CachedExperts final : public model::ExpertProvider {
public:
    explicit CachedExperts(ExpertCache& cache) : cache_(cache) {}
    std::span<const uint8_t> acquire(int layer, int expert) override { return cache_.acquire(layer, expert); }
    void release_layer(int) override { cache_.unpin_all(); }
    size_t max_pinned() const override { return cache_.slots(); }

private:
    ExpertCache& cache_;
};

}  // namespace

Engine::Engine(const format::Container& container, const MemoryPlan& plan, const EngineOptions& options)
    : container_(container), weights_(model::bind_weights(container)), pool_(options.threads),
      cache_(container, std::max<uint64_t>(plan.cache_records, 2ull * container.config().top_k), options.cache_policy) {}

uint64_t Engine::warm_cache() {
    uint64_t loaded = 0;
    for (const auto& [layer, bank] : container_.manifest().banks)
        for (uint32_t e = 0; e < bank.experts && loaded < cache_.slots(); ++e, ++loaded) {
            cache_.acquire(layer, static_cast<int>(e));
            cache_.unpin_all();
        }
    cache_.reset_stats();
    return loaded;
}

Session::Session(Engine& engine, uint32_t context_length)
    : engine_(engine), state_(engine.config(), context_length), workspace_(engine.config(), engine.container(), engine.threads()) {}

void Session::set_chunk_tokens(size_t chunk_tokens) {
    if (chunk_tokens < 1 || chunk_tokens > static_cast<size_t>(model::max_chunk_tokens))
        fail(WASTE_ERR_INVALID_ARGUMENT, "chunk of {} tokens is out of range [1, {}]", chunk_tokens, model::max_chunk_tokens);
    chunk_tokens_ = chunk_tokens;
}

void Session::eval(const int32_t* tokens, size_t count, float* hidden) {
    if (count == 0) fail(WASTE_ERR_INVALID_ARGUMENT, "eval: no tokens");
    if (state_.position + count > state_.context_length)
        fail(WASTE_ERR_CONTEXT_FULL, "{} tokens after {} exceed the context length {}; reset the session or open with a larger --ctx",
             count, state_.position, state_.context_length);
    const format::ModelConfig& c = engine_.config();
    CachedExperts experts(engine_.cache());
    std::vector<std::vector<model::RouteChoice>> routes;
    std::vector<float> chunk_hidden;
    model::ForwardContext ctx{engine_.container(), c, engine_.weights(), engine_.pool(), experts, workspace_,
                              kernels::GluActivation{c.activation == format::Activation::situ, static_cast<float>(c.situ_beta),
                                                     static_cast<float>(c.situ_linear_beta)},
                              route_sink_ ? &routes : nullptr, nullptr, profiling_ ? &profile_ : nullptr};
    for (size_t done = 0; done < count;) {
        const size_t n = std::min(chunk_tokens_, count - done);
        if (hidden) {
            chunk_hidden.assign((c.layers + 1) * n * c.hidden, 0.0f);
            ctx.hidden = chunk_hidden.data();
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
            // session starts over rather than continue from it.
            engine_.cache().unpin_all();
            state_.reset();
            throw;
        }
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        const ExpertCacheStats& after = engine_.cache().stats();
        stats_.tokens += n;
        stats_.expert_hits += after.hits - before.hits;
        stats_.expert_misses += after.misses - before.misses;
        stats_.bytes_read += after.bytes_read - before.bytes_read;
        stats_.io_seconds += after.read_seconds - before.read_seconds;
        stats_.compute_seconds += seconds - (after.read_seconds - before.read_seconds);
        if (route_sink_)
            for (auto& token_routes : routes) route_sink_->push_back(std::move(token_routes));
        if (hidden)  // chunk layout [slot][n][H] into the caller's [slot][count][H]
            for (int slot = 0; slot <= c.layers; ++slot)
                std::memcpy(hidden + (static_cast<size_t>(slot) * count + done) * c.hidden,
                            chunk_hidden.data() + static_cast<size_t>(slot) * n * c.hidden, sizeof(float) * n * c.hidden);
        done += n;
    }
}

void Session::reset() {
    state_.reset();
}

}  // namespace waste::runtime
