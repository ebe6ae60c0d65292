#include "runtime/engine.h"

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

private:
    ExpertCache& cache_;
};

}  // namespace

Engine::Engine(const format::Container& container, const MemoryPlan& plan, const EngineOptions& options)
    : container_(container), weights_(model::bind_weights(container)), pool_(options.threads),
      cache_(container, std::max<uint64_t>(plan.cache_records, 2ull * container.config().top_k)) {}

Session::Session(Engine& engine, uint32_t context_length)
    : engine_(engine), state_(engine.config(), context_length), workspace_(engine.config(), engine.container()) {}

void Session::eval(const int32_t* tokens, size_t count) {
    if (count == 0) fail(WASTE_ERR_INVALID_ARGUMENT, "eval: no tokens");
    if (state_.position + count > state_.context_length)
        fail(WASTE_ERR_CONTEXT_FULL, "{} tokens after {} exceed the context length {}; reset the session or open with a larger --ctx",
             count, state_.position, state_.context_length);
    CachedExperts experts(engine_.cache());
    std::vector<model::RouteChoice> routes;
    model::ForwardContext ctx{engine_.container(), engine_.config(), engine_.weights(), engine_.pool(), experts, workspace_,
                              kernels::GluActivation{engine_.config().activation == format::Activation::situ,
                                                     static_cast<float>(engine_.config().situ_beta),
                                                     static_cast<float>(engine_.config().situ_linear_beta)},
                              route_sink_ ? &routes : nullptr};
    for (size_t i = 0; i < count; ++i) {
        const ExpertCacheStats before = engine_.cache().stats();
        const auto start = std::chrono::steady_clock::now();
        try {
            model::forward_token(ctx, state_, tokens[i]);
        } catch (...) {
            // A token that failed half-way left the state inconsistent: the
            // session starts over rather than continue from it.
            engine_.cache().unpin_all();
            state_.reset();
            throw;
        }
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        const ExpertCacheStats& after = engine_.cache().stats();
        stats_.tokens += 1;
        stats_.expert_hits += after.hits - before.hits;
        stats_.expert_misses += after.misses - before.misses;
        stats_.bytes_read += after.bytes_read - before.bytes_read;
        stats_.io_seconds += after.read_seconds - before.read_seconds;
        stats_.compute_seconds += seconds - (after.read_seconds - before.read_seconds);
        if (route_sink_) route_sink_->push_back(routes);
    }
}

void Session::reset() {
    state_.reset();
}

}  // namespace waste::runtime
