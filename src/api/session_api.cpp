// session_api.cpp — the session half of the C API: evaluate tokens, read
// logits, generate greedily, stats.
#include <algorithm>
#include <memory>

#include <nlohmann/json.hpp>

#include "api/api_support.h"
#include "api/model_handle.h"
#include "api/session_handle.h"

using waste::api::guarded;


extern "C" {

waste_status waste_session_create(waste_model* model, waste_session** out_session, waste_error* error) {
    return guarded(error, [&] {
        if (!model || !out_session) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_session_create: model and out_session are required");
        *out_session = nullptr;
        if (!model->engine)
            waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_session_create: the model was opened metadata-only; open it without WASTE_OPEN_METADATA_ONLY");
        auto session = std::make_unique<waste_session>();
        if (!model->session_slots->try_take(1))
            waste::fail(WASTE_ERR_BUDGET,
                        "waste_session_create: {} sessions are live, the memory plan holds {} (waste_open_options.sessions); "
                        "free one or open with more",
                        model->session_slots->used(), model->session_slots->capacity());
        session->model = model;  // from here its destructor gives the slot back
        session->session = std::make_unique<waste::runtime::Session>(*model->engine, model->plan.context_length);
        if (model->vision) {
            const waste::format::VisionConfig& vision = model->vision->config();
            session->session->enable_images(static_cast<int32_t>(vision.placeholder), waste::runtime::image_queue_rows(vision));
        }
        *out_session = session.release();
    });
}

void waste_session_free(waste_session* session) { delete session; }

waste_status waste_session_reset(waste_session* session, waste_error* error) {
    return guarded(error, [&] {
        if (!session) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_session_reset: session is required");
        session->pending.clear();
        session->session->reset();
    });
}

waste_status waste_session_eval(waste_session* session, const int32_t* tokens, size_t count, waste_error* error) {
    return guarded(error, [&] {
        if (!session || (!tokens && count)) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_session_eval: session and tokens are required");
        if (session->pending.empty()) {
            session->session->eval(tokens, count);
            return;
        }
        // The last generated token goes in with the new ones, one chunk.
        std::vector<int32_t> joined(session->pending);
        joined.insert(joined.end(), tokens, tokens + count);
        session->session->eval(joined.data(), joined.size());  // throws before appending anything when full
        session->pending.clear();
    });
}

waste_status waste_session_eval_batch(waste_session* const* sessions, const int32_t* tokens, size_t count, waste_error* error) {
    return guarded(error, [&] {
        if (!sessions || !tokens || count == 0)
            waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_session_eval_batch: sessions, tokens and a count of 1 or more are required");
        std::vector<waste::runtime::Session*> members(count);
        for (size_t i = 0; i < count; ++i) {
            if (!sessions[i]) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_session_eval_batch: session {} is NULL", i);
            members[i] = sessions[i]->session.get();
        }
        // Checked before any pending token is evaluated, so a refusal changes nothing.
        waste::runtime::Session::check_batch(members, tokens);
        for (size_t i = 0; i < count; ++i) sessions[i]->flush_pending();
        waste::runtime::Session::eval_batch(members, tokens);
    });
}

waste_status waste_session_eval_hidden(waste_session* session, const int32_t* tokens, size_t count, float* hidden,
                                       size_t hidden_floats, waste_error* error) {
    return guarded(error, [&] {
        if (!session || (!tokens && count) || !hidden)
            waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_session_eval_hidden: session, tokens and hidden are required");
        const auto& c = session->model->container->config();
        const size_t needed = (static_cast<size_t>(c.layers) + 1) * count * c.hidden;
        if (hidden_floats != needed)
            waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_session_eval_hidden: hidden holds {} floats, needs {} ({} layers + 1, {} tokens, hidden {})",
                        hidden_floats, needed, c.layers, count, c.hidden);
        session->flush_pending();
        session->session->eval(tokens, count, hidden);
    });
}

waste_status waste_session_set_prefill_chunk(waste_session* session, uint32_t tokens, waste_error* error) {
    return guarded(error, [&] {
        if (!session) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_session_set_prefill_chunk: session is required");
        session->session->set_chunk_tokens(tokens);
    });
}

waste_status waste_session_logits(const waste_session* session, const float** out_logits, size_t* out_vocab,
                                  waste_error* error) {
    return guarded(error, [&] {
        if (!session || !out_logits || !out_vocab) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_session_logits: arguments are required");
        // Logically const: the deferred evaluation of the last generated token.
        const_cast<waste_session*>(session)->flush_pending();
        if (session->session->position() == 0) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_session_logits: no token evaluated yet");
        *out_logits = session->session->logits().data();
        *out_vocab = session->session->logits().size();
    });
}

uint32_t waste_session_position(const waste_session* session) {
    return session ? session->session->position() + static_cast<uint32_t>(session->pending.size()) : 0;
}

uint32_t waste_session_context_length(const waste_session* session) {
    return session ? session->session->context_length() : 0;
}

waste_status waste_session_generate_greedy(waste_session* session, size_t max_tokens, int32_t* out_tokens,
                                           size_t* out_count, waste_token_fn on_token, void* user, waste_error* error) {
    return guarded(error, [&] {
        if (!session || !out_count || (!out_tokens && max_tokens))
            waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_session_generate_greedy: arguments are required");
        *out_count = 0;
        session->flush_pending();
        auto& s = *session->session;
        if (s.position() == 0) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_session_generate_greedy: evaluate a prompt first");
        const auto& config = session->model->container->config();
        for (size_t i = 0; i < max_tokens; ++i) {
            const auto& logits = s.logits();
            const int32_t next = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
            out_tokens[(*out_count)++] = next;
            if (on_token && on_token(next, user)) break;
            if (config.is_eos(next)) break;
            if (i + 1 < max_tokens) s.eval(&next, 1);
        }
    });
}

namespace {

waste_session_stats to_c_stats(const waste::runtime::TokenStats& st) {
    waste_session_stats out{};
    out.tokens = st.tokens;
    out.expert_hits = st.expert_hits;
    out.expert_misses = st.expert_misses;
    out.bytes_read = st.bytes_read;
    out.io_seconds = st.io_seconds;
    out.compute_seconds = st.compute_seconds;
    out.prefetched = st.prefetched;
    out.prefetch_used = st.prefetch_used;
    out.prefetch_bytes = st.prefetch_bytes;
    out.prefetch_late = st.prefetch_late;
    out.prefetch_wasted = st.prefetch_wasted;
    return out;
}

}  // namespace

waste_status waste_session_stats_get(const waste_session* session, waste_session_stats* out_stats, waste_error* error) {
    return guarded(error, [&] {
        if (!session || !out_stats) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_session_stats_get: arguments are required");
        *out_stats = to_c_stats(session->session->stats());
    });
}

waste_status waste_session_stats_last(const waste_session* session, waste_session_stats* out_stats, waste_error* error) {
    return guarded(error, [&] {
        if (!session || !out_stats) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_session_stats_last: arguments are required");
        *out_stats = to_c_stats(session->session->last_stats());
    });
}

waste_status waste_session_set_lookahead(waste_session* session, uint32_t experts, waste_error* error) {
    return guarded(error, [&] {
        if (!session) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_session_set_lookahead: session is required");
        const auto& c = session->model->container->config();
        if (experts > static_cast<uint32_t>(std::max(c.experts, 0)))
            waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_session_set_lookahead: {} experts is more than the model's {}", experts, c.experts);
        session->session->set_lookahead(experts);
    });
}

waste_status waste_session_set_lookahead_layers(waste_session* session, uint32_t layers, waste_error* error) {
    return guarded(error, [&] {
        if (!session) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_session_set_lookahead_layers: session is required");
        if (layers < 1 || layers > waste::runtime::max_lookahead_layers)
            waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_session_set_lookahead_layers: {} layers is outside 1 to {}", layers,
                        waste::runtime::max_lookahead_layers);
        session->session->set_lookahead_layers(layers);
    });
}

waste_status waste_session_set_route_dump(waste_session* session, const char* path, waste_error* error) {
    return guarded(error, [&] {
        if (!session) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_session_set_route_dump: session is required");
        session->session->set_route_log(nullptr);  // publishes the previous dump, or reports why not
        if (path) session->session->set_route_log(std::make_unique<waste::runtime::RouteLog>(path));
    });
}

waste_status waste_session_set_profiling(waste_session* session, int on, waste_error* error) {
    return guarded(error, [&] {
        if (!session) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_session_set_profiling: session is required");
        session->session->set_profiling(on != 0);
    });
}

waste_status waste_session_profile_json(const waste_session* session, char** out_json, waste_error* error) {
    return guarded(error, [&] {
        if (!session || !out_json) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_session_profile_json: arguments are required");
        nlohmann::json out;
        out["tokens"] = session->session->stats().tokens;
        nlohmann::json seconds = nlohmann::json::object();
        for (int i = 0; i < static_cast<int>(waste::model::ProfileCategory::count); ++i) {
            const auto category = static_cast<waste::model::ProfileCategory>(i);
            seconds[waste::model::profile_category_name(category)] = session->session->profile().seconds(category);
        }
        out["seconds"] = seconds;
        *out_json = waste::api::to_c_string(out.dump());
    });
}

}  // extern "C"
