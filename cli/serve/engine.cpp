#include "engine.h"

#include <algorithm>
#include <cstdio>
#include <chrono>
#include <mutex>
#include <random>

#include <fmt/format.h>

#include "api_error.h"
#include "stop_strings.h"

namespace waste_serve {

namespace {

using nlohmann::json;

[[noreturn]] void engine_failure(waste_session* session, const waste_error& error, const char* doing) {
    waste_session_reset(session, nullptr);
    throw ApiError{500, std::string("the engine failed ") + doing + ": " + error.message, "engine_error", "", "engine_error"};
}

waste_session_stats minus(const waste_session_stats& a, const waste_session_stats& b) {
    waste_session_stats d{};
    d.tokens = a.tokens - b.tokens;
    d.expert_hits = a.expert_hits - b.expert_hits;
    d.expert_misses = a.expert_misses - b.expert_misses;
    d.bytes_read = a.bytes_read - b.bytes_read;
    d.prefetched = a.prefetched - b.prefetched;
    d.prefetch_used = a.prefetch_used - b.prefetch_used;
    d.prefetch_late = a.prefetch_late - b.prefetch_late;
    d.prefetch_wasted = a.prefetch_wasted - b.prefetch_wasted;
    return d;
}

}  // namespace

uint32_t completion_budget(const Engine& engine, const GenerationJob& job) {
    const size_t prompt = job.prompt.size();
    if (prompt >= engine.context_length)
        throw bad_request("the prompt is " + std::to_string(prompt) + " tokens; the context holds " +
                              std::to_string(engine.context_length) + " (prompt and reply together)",
                          "messages", "context_length_exceeded");
    const uint32_t asked = job.params.max_tokens.value_or(engine.default_max_tokens);
    return std::min<uint32_t>(asked, engine.context_length - static_cast<uint32_t>(prompt));
}

namespace {

// A prompt with images: the images through the tower into the session's
// queue, then the whole prompt in one evaluation — an image's rows are
// consumed by the call that meets its pads, so its pads cannot be split over
// prefill turns (vision.md §4). No prompt reuse either way: two different
// images of one size give the same token ids, so a stored prefix could
// resume a conversation about another picture.
void prefill_with_images(Engine& engine, waste_session* session, const GenerationJob& job) {
    std::lock_guard lock(engine.turn);
    waste_error error{};
    if (waste_session_reset(session, &error) != WASTE_OK) engine_failure(session, error, "resetting a session");
    for (size_t i = 0; i < job.images.size(); ++i) {
        const std::string name = fmt::format("messages image {}", i + 1);
        if (waste_session_image_add(session, job.images[i].data(), job.images[i].size(), name.c_str(), nullptr, &error) != WASTE_OK) {
            waste_session_image_clear(session, nullptr);
            if (error.status == WASTE_ERR_BUDGET || error.status == WASTE_ERR_INTERNAL) engine_failure(session, error, "reading an image");
            throw ApiError{400, std::string("an image cannot be read: ") + error.message, "invalid_request_error", "messages", "invalid_image"};
        }
    }
    int32_t* expanded = nullptr;
    size_t count = 0;
    if (waste_session_image_expand(session, job.rendered_prompt.data(), job.rendered_prompt.size(), &expanded, &count, &error) != WASTE_OK)
        engine_failure(session, error, "expanding the image pads");
    const bool same = count == job.prompt.size() && std::equal(job.prompt.begin(), job.prompt.end(), expanded);
    waste_tokens_free(expanded);
    if (!same) {
        waste_session_image_clear(session, nullptr);
        error.status = WASTE_ERR_INTERNAL;
        std::snprintf(error.message, sizeof error.message, "the image pads expanded differently from the request's count");
        engine_failure(session, error, "expanding the image pads");
    }
    if (waste_session_eval(session, job.prompt.data(), job.prompt.size(), &error) != WASTE_OK)
        engine_failure(session, error, "evaluating the prompt");
}

}  // namespace

Outcome generate(Engine& engine, size_t slot, GenerationJob& job, const StepSink& sink) {
    const auto started = std::chrono::steady_clock::now();
    waste_session* session = engine.sessions.at(slot);
    Outcome outcome;
    outcome.prompt_tokens = static_cast<uint32_t>(job.prompt.size());
    const uint32_t budget = completion_budget(engine, job);
    const uint64_t seed = job.params.seed.value_or(std::random_device{}());
    TokenSampler sampler(job.params, seed);
    StopStrings stops(job.params.stop);
    waste_error error{};
    waste_session_stats before{};
    waste_session_stats_get(session, &before, nullptr);

    if (!job.images.empty()) {
        prefill_with_images(engine, session, job);
    } else {
    // Prefill: resume from the longest stored prefix, then the rest in turns.
    {
        std::lock_guard lock(engine.turn);
        outcome.reused_tokens = engine.prompt_cache ? engine.prompt_cache->resume(session, job.prompt) : 0;
        if (!engine.prompt_cache && waste_session_reset(session, &error) != WASTE_OK)
            engine_failure(session, error, "resetting a session");
    }
    const size_t turn = std::max<size_t>(engine.prefill_turn, 1);
    for (size_t at = outcome.reused_tokens; at < job.prompt.size(); at += turn) {
        std::lock_guard lock(engine.turn);
        const size_t count = std::min(turn, job.prompt.size() - at);
        if (waste_session_eval(session, job.prompt.data() + at, count, &error) != WASTE_OK)
            engine_failure(session, error, "evaluating the prompt");
    }
    if (engine.prompt_cache) {
        std::lock_guard lock(engine.turn);
        engine.prompt_cache->remember(session, job.prompt);
    }
    }
    if (outcome.reused_tokens) {
        ++engine.metrics->prompt_cache_hits;
        engine.metrics->prompt_cache_tokens_reused += outcome.reused_tokens;
    }
    engine.metrics->prompt_tokens += outcome.prompt_tokens;
    engine.metrics->prefilled_tokens += outcome.prompt_tokens - outcome.reused_tokens;

    bool model_ended = false;
    int32_t pending = -1;  // the last token drawn, evaluated at the next step (never when the reply ends)
    std::vector<int32_t> held = job.prompt;  // what the session holds: the prompt, then each token evaluated
    std::vector<float> masked;  // a constrained reply's copy of the logits, masked by it
    for (uint32_t n = 0; n < budget; ++n) {
        if (engine.cancel_all.load()) break;
        TokenChoice choice;
        bool complete = false;  // the constraint's grammar allows nothing more
        if (pending >= 0) {
            if (engine.stepper->step(session, pending, &error) != WASTE_OK) {
                std::lock_guard lock(engine.turn);
                engine_failure(session, error, "evaluating a generated token");
            }
            held.push_back(pending);
        }
        {
            std::lock_guard lock(engine.turn);
            const float* logits = nullptr;
            size_t vocab = 0;
            if (waste_session_logits(session, &logits, &vocab, &error) != WASTE_OK)
                engine_failure(session, error, "reading the logits");
            if (!job.constraint) {
                if (!sampler.pick(logits, vocab, choice, error)) engine_failure(session, error, "sampling");
            } else {
                masked.assign(logits, logits + vocab);
                const ConstrainedReply::Next next = job.constraint->next(masked.data(), vocab);
                if (next.action == ConstrainedReply::Action::end) complete = true;
                else if (next.action == ConstrainedReply::Action::force) sampler.force(logits, vocab, next.token, choice);
                else if (!sampler.pick(logits, vocab, choice, error, masked.data())) engine_failure(session, error, "sampling");
            }
        }
        if (complete) {
            model_ended = true;
            break;
        }
        ++outcome.completion_tokens;
        ++engine.metrics->generated_tokens;
        if (job.params.logprobs) outcome.choices.push_back(choice);
        // A constrained reply's end tokens are allowed only where its grammar
        // may end, and include XTML's <|close|> of the answer.
        const bool constraint_ends = job.constraint && job.constraint->accept(choice.token);
        if (constraint_ends ||
            std::find(engine.eos_ids.begin(), engine.eos_ids.end(), choice.token) != engine.eos_ids.end() ||
            std::find(job.stop_ids.begin(), job.stop_ids.end(), choice.token) != job.stop_ids.end()) {
            model_ended = true;
            break;
        }
        pending = choice.token;
        StepOutput step;
        step.delta = job.reader->push(choice.token);
        step.delta.content = stops.push(step.delta.content);
        step.choice = &choice;
        if (!sink(step)) {
            outcome.client_gone = true;
            break;
        }
        if (stops.matched()) break;
    }

    // The state after the reply, kept beside the prompt's: a next turn whose
    // prompt renders this reply as it was generated prefills only what
    // follows it (the reply's end marker, the new messages). One that
    // renders it otherwise (a stop string cut it, reasoning dropped from the
    // history) still resumes from the prompt's state.
    if (engine.prompt_cache && job.images.empty() && held.size() > job.prompt.size()) {
        std::lock_guard lock(engine.turn);
        engine.prompt_cache->remember(session, held);
    }

    // The end: what the reader and the stop strings held back.
    StepOutput last;
    last.delta = job.reader->finish();
    last.delta.content = stops.push(last.delta.content);
    last.delta.content += stops.finish();
    if (!outcome.client_gone && !sink(last)) outcome.client_gone = true;

    outcome.message = job.reader->message();
    outcome.message["content"] = stops.content().empty() ? json(nullptr) : json(stops.content());
    const bool has_calls = outcome.message.contains("tool_calls") && !outcome.message["tool_calls"].empty();
    // A constrained reply cut by max_tokens is "length" even with a call
    // open: its arguments are unfinished, not what the schema promised.
    const bool cut = !model_ended && !stops.matched() && outcome.completion_tokens >= budget;
    if (has_calls && !(job.constraint && cut)) outcome.finish_reason = "tool_calls";
    else if (model_ended || stops.matched()) outcome.finish_reason = "stop";
    else if (outcome.completion_tokens >= budget) outcome.finish_reason = "length";
    else outcome.finish_reason = "stop";

    waste_session_stats after{};
    waste_session_stats_get(session, &after, nullptr);
    outcome.stats = minus(after, before);
    outcome.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
    engine.metrics->expert_hits += outcome.stats.expert_hits;
    engine.metrics->expert_misses += outcome.stats.expert_misses;
    engine.metrics->bytes_read += outcome.stats.bytes_read;
    engine.metrics->prefetched += outcome.stats.prefetched;
    engine.metrics->prefetch_used += outcome.stats.prefetch_used;
    engine.metrics->prefetch_late += outcome.stats.prefetch_late;
    engine.metrics->prefetch_wasted += outcome.stats.prefetch_wasted;
    engine.metrics->generation_nanoseconds += static_cast<uint64_t>(outcome.ms * 1e6);
    if (outcome.client_gone) ++engine.metrics->disconnects;
    return outcome;
}

json usage_json(const Outcome& outcome) {
    return {{"prompt_tokens", outcome.prompt_tokens},
            {"completion_tokens", outcome.completion_tokens},
            {"total_tokens", outcome.prompt_tokens + outcome.completion_tokens},
            {"prompt_tokens_details", {{"cached_tokens", outcome.reused_tokens}}}};
}

json waste_json(const Engine& engine, const Outcome& outcome) {
    const uint64_t lookups = outcome.stats.expert_hits + outcome.stats.expert_misses;
    return {{"tokens_generated", outcome.completion_tokens},
            {"experts_hit", outcome.stats.expert_hits},
            {"experts_missed", outcome.stats.expert_misses},
            {"expert_hit_rate", lookups ? json(static_cast<double>(outcome.stats.expert_hits) / lookups) : json(nullptr)},
            {"bytes_read", outcome.stats.bytes_read},
            {"direct_io", engine.direct_io},
            {"prompt_tokens_reused", outcome.reused_tokens},
            {"ms", outcome.ms}};
}

std::string token_text(const Engine& engine, int32_t token) {
    char* text = nullptr;
    size_t length = 0;
    if (waste_tokenizer_detokenize(engine.tokenizer, &token, 1, WASTE_TOKENIZE_MARKUP, &text, &length, nullptr) != WASTE_OK)
        return {};
    std::string out(text, length);
    waste_string_free(text);
    return out;
}

}  // namespace waste_serve
