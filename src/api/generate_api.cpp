// generate_api.cpp — sampling, generation with stop conditions, and the
// session state file, for the C API (include/waste/waste.h).
#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/api_support.h"
#include "api/grammar_handle.h"
#include "api/model_handle.h"
#include "api/session_handle.h"
#include "api/tokenizer_handle.h"
#include "grammar/token_mask.h"
#include "runtime/sampler.h"
#include "text/detokenizer.h"
#include "text/stop_strings.h"

using waste::api::guarded;

struct waste_sampler {
    std::unique_ptr<waste::runtime::Sampler> sampler;
};

namespace {

// Bounds on what a caller hands in (why: a stop list is a handful of short
// strings; anything near these is a bug or an attack).
constexpr size_t max_stop_strings = 1024, max_stop_string_bytes = 4096, max_stop_tokens = 1u << 16;

waste::runtime::SamplerOptions to_sampler_options(const waste_sampler_options& o) {
    waste::runtime::SamplerOptions options;
    options.temperature = o.temperature;
    options.top_k = o.top_k;
    options.top_p = o.top_p;
    options.min_p = o.min_p;
    options.seed = o.seed;
    return options;
}

// Text out of generated ids: UTF-8 completion, then stop strings.
class TextStream {
public:
    TextStream(const waste_generate_options& options) {
        if (options.stop_string_count && !options.tokenizer)
            waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_session_generate: stop strings need a tokenizer");
        if (options.stop_string_count > max_stop_strings || (options.stop_string_count && !options.stop_strings))
            waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_session_generate: {} stop strings (at most {})",
                        options.stop_string_count, max_stop_strings);
        std::vector<std::string> stops;
        for (size_t i = 0; i < options.stop_string_count; ++i) {
            const char* stop = options.stop_strings[i];
            if (!stop) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_session_generate: stop string {} is NULL", i);
            stops.emplace_back(stop, strnlen(stop, max_stop_string_bytes + 1));
            if (stops.back().size() > max_stop_string_bytes)
                waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_session_generate: stop string {} is longer than {} bytes", i,
                            max_stop_string_bytes);
        }
        if (options.tokenizer) {
            tokenizer_ = options.tokenizer->tokenizer;
            detokenizer_.emplace(tokenizer_, (options.detokenize_flags & WASTE_TOKENIZE_MARKUP) != 0);
        }
        if (!stops.empty()) matcher_.emplace(std::move(stops));
    }
    bool has_text() const { return detokenizer_.has_value(); }
    std::string_view push(int32_t token) {
        // The model's id space may exceed a tokenizer the caller opened from
        // a rank file: an id it lacks is a reserved one, without bytes.
        if (!detokenizer_ || !tokenizer_->has_token(token)) return {};
        const std::string_view bytes = detokenizer_->push(token);
        return matcher_ ? matcher_->push(bytes) : bytes;
    }
    // What is still held at the end (never the text after a stop string).
    std::string finish() {
        if (!detokenizer_) return {};
        std::string rest(detokenizer_->finish());
        if (!matcher_) return rest;
        std::string out(matcher_->push(rest));
        out += matcher_->finish();
        return out;
    }
    int matched() const { return matcher_ ? matcher_->matched() : -1; }

private:
    std::shared_ptr<const waste::text::Tokenizer> tokenizer_;
    std::optional<waste::text::StreamDetokenizer> detokenizer_;
    std::optional<waste::text::StopStringMatcher> matcher_;
};

}  // namespace

extern "C" {

void waste_sampler_options_init(waste_sampler_options* options) {
    if (options) *options = waste_sampler_options{0.0, 0, 1.0, 0.0, 0};
}

waste_status waste_model_sampling_defaults(const waste_model* model, waste_sampler_options* out_options,
                                          uint32_t* out_from_release, waste_error* error) {
    return guarded(error, [&] {
        if (!model || !out_options)
            waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_model_sampling_defaults: model and out_options are required");
        const waste::format::SamplingDefaults& release = model->container->sampling_defaults();
        const waste::runtime::SamplerOptions& engine = waste::runtime::engine_sampling_defaults;
        *out_options = waste_sampler_options{release.temperature.value_or(engine.temperature), release.top_k.value_or(engine.top_k),
                                             release.top_p.value_or(engine.top_p), release.min_p.value_or(engine.min_p), 0};
        if (out_from_release)
            *out_from_release = (release.temperature ? WASTE_SAMPLING_TEMPERATURE : 0u) | (release.top_k ? WASTE_SAMPLING_TOP_K : 0u) |
                                (release.top_p ? WASTE_SAMPLING_TOP_P : 0u) | (release.min_p ? WASTE_SAMPLING_MIN_P : 0u);
    });
}

waste_status waste_sampler_create(const waste_sampler_options* options, waste_sampler** out_sampler, waste_error* error) {
    return guarded(error, [&] {
        if (!options || !out_sampler) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_sampler_create: options and out_sampler are required");
        *out_sampler = nullptr;
        auto handle = std::make_unique<waste_sampler>();
        handle->sampler = std::make_unique<waste::runtime::Sampler>(to_sampler_options(*options));
        *out_sampler = handle.release();
    });
}

void waste_sampler_free(waste_sampler* sampler) { delete sampler; }

waste_status waste_sampler_sample(waste_sampler* sampler, const float* logits, size_t vocab, int32_t* out_token,
                                  float* out_logprob, waste_error* error) {
    return guarded(error, [&] {
        if (!sampler || !logits || !out_token || vocab == 0 || vocab > static_cast<size_t>(INT32_MAX))
            waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_sampler_sample: sampler, logits (vocab {} >= 1) and out_token are required", vocab);
        const auto chosen = sampler->sampler->sample(std::span<const float>(logits, vocab));
        *out_token = chosen.id;
        if (out_logprob) *out_logprob = static_cast<float>(chosen.logprob);
    });
}

void waste_generate_options_init(waste_generate_options* options) {
    if (options) *options = waste_generate_options{};
}

waste_status waste_session_generate(waste_session* session, waste_sampler* sampler, const waste_generate_options* options,
                                    waste_generate_fn on_step, void* user, waste_generate_result* out_result,
                                    waste_error* error) {
    return guarded(error, [&] {
        if (!session || !options || !out_result)
            waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_session_generate: session, options and out_result are required");
        *out_result = waste_generate_result{0, WASTE_STOP_LENGTH, -1};
        if (options->stop_token_count > max_stop_tokens || (options->stop_token_count && !options->stop_tokens))
            waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_session_generate: {} stop tokens (at most {})",
                        options->stop_token_count, max_stop_tokens);
        const std::vector<int32_t> stop_tokens(options->stop_tokens, options->stop_tokens + options->stop_token_count);
        TextStream text(*options);
        waste::runtime::Sampler greedy(waste::runtime::SamplerOptions{});
        waste::runtime::Sampler& chooser = sampler ? *sampler->sampler : greedy;
        // Every EOS id of the model ends it (config.eos_token_id's list, generation_config.json's)
        const std::vector<int32_t> eos_ids = (options->flags & WASTE_GENERATE_IGNORE_EOS)
                                                 ? std::vector<int32_t>{}
                                                 : session->model->container->config().eos_ids;
        waste::runtime::Session& s = *session->session;

        // A grammar masks each step's logits in a copy (the session's stay
        // the model's); without one the loop below is exactly as before.
        std::unique_ptr<waste::api::GrammarRun> grammar_run;
        waste::grammar::TokenMasker* masker = nullptr;
        std::vector<int32_t> end_tokens;
        std::vector<float> masked;
        if (options->grammar) {
            grammar_run = std::make_unique<waste::api::GrammarRun>(*options->grammar, "waste_session_generate");
            masker = grammar_run->masker.get();
            end_tokens = stop_tokens;
            end_tokens.insert(end_tokens.end(), eos_ids.begin(), eos_ids.end());
        }

        session->flush_pending();
        if (s.position() == 0) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_session_generate: evaluate a prompt first");
        bool stopped = false;
        for (uint32_t i = 0; i < options->max_tokens && !stopped; ++i) {
            session->flush_pending();  // the previous token: one decode step
            waste::runtime::SampledToken chosen;
            if (masker) {
                const auto logits = s.logits();
                masked.assign(logits.begin(), logits.end());
                if (masker->mask_logits(masked, end_tokens) == 0) {
                    out_result->stop_reason = WASTE_STOP_GRAMMAR;
                    break;
                }
                chosen = chooser.sample(masked);
                chosen.logprob = waste::runtime::log_softmax_at(logits, chosen.id);  // the model's own, unmasked
                if (!masker->accept(chosen.id, end_tokens))
                    waste::fail(WASTE_ERR_INTERNAL, "waste_session_generate: token {} was sampled past the grammar's mask", chosen.id);
            } else {
                chosen = chooser.sample(s.logits());
            }
            if (s.position() >= s.context_length()) {
                out_result->stop_reason = WASTE_STOP_CONTEXT;
                break;
            }
            session->pending.push_back(chosen.id);
            ++out_result->tokens;
            std::string_view piece;
            if (std::find(eos_ids.begin(), eos_ids.end(), chosen.id) != eos_ids.end()) {
                out_result->stop_reason = WASTE_STOP_EOS;
                stopped = true;
            } else if (auto hit = std::find(stop_tokens.begin(), stop_tokens.end(), chosen.id); hit != stop_tokens.end()) {
                out_result->stop_reason = WASTE_STOP_TOKEN;
                out_result->stop_index = static_cast<int32_t>(hit - stop_tokens.begin());
                stopped = true;
            } else {
                piece = text.push(chosen.id);
                if (text.matched() >= 0) {
                    out_result->stop_reason = WASTE_STOP_STRING;
                    out_result->stop_index = text.matched();
                    stopped = true;
                }
            }
            const waste_generated step{chosen.id, static_cast<float>(chosen.logprob), piece.data(), piece.size()};
            if (on_step && on_step(&step, user) && !stopped) {
                out_result->stop_reason = WASTE_STOP_CALLBACK;
                stopped = true;
            }
        }
        const std::string rest = text.finish();
        if (on_step && !rest.empty()) {
            const waste_generated step{-1, 0.0f, rest.data(), rest.size()};
            on_step(&step, user);
        }
    });
}

waste_status waste_state_save(waste_session* session, const char* path, waste_error* error) {
    return guarded(error, [&] {
        if (!session || !path) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_state_save: session and path are required");
        session->flush_pending();
        session->session->save_state(path);
    });
}

waste_status waste_state_load(waste_session* session, const char* path, waste_error* error) {
    return guarded(error, [&] {
        if (!session || !path) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_state_load: session and path are required");
        session->pending.clear();
        session->session->load_state(path);
    });
}

}  // extern "C"
