// engine.h — the model the server runs and the per-token generation loop.
// Each slot owns a session; every engine call of every slot takes the turn
// lock for one step (a prefill turn, a batched decode step, reading the
// logits), so concurrent streams share the one expert cache and reader:
// their decode steps run together as one batch (batch_stepper.h), and a new
// request's prefill runs in turns between them.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "batch_stepper.h"
#include "constrained_reply.h"
#include "grammar_cache.h"
#include "metrics.h"
#include "prompt_cache.h"
#include "reply_reader.h"
#include "sampling_params.h"
#include "slots.h"
#include "token_sampler.h"
#include "waste/waste.h"

namespace waste_serve {

struct Engine {
    waste_model* model = nullptr;           // owned by the command
    waste_tokenizer* tokenizer = nullptr;   // owned by the command
    std::vector<waste_session*> sessions;   // one per slot, owned by the command
    uint32_t context_length = 0;
    uint32_t default_max_tokens = 4096;
    SamplingDefaults sampling_defaults;     // for requests that name no sampling (sampling_params.h)
    // Prompt tokens evaluated per turn of the lock: the model's prefill chunk
    // with one slot (nothing else waits), at most 64 with several, so a new
    // request's prefill does not stall the other slots' token streams for
    // its whole length. The chunk changes no bit.
    size_t prefill_turn = 64;
    std::vector<int32_t> eos_ids;           // every id that ends a generation (waste_tokenizer_eos_ids)
    bool direct_io = false;
    bool thinking = true;
    bool vision = false;                    // --vision: the model's tower is loaded
    std::string chat_template;              // --chat-template FILE's text ("" = the container's own)
    std::string model_id;
    nlohmann::json model_info;              // waste_model_info_json
    TurnLock turn;
    std::unique_ptr<BatchStepper> stepper;  // decode steps of concurrent streams together (over turn)
    std::unique_ptr<PromptCache> prompt_cache;  // null: no snapshot reserve
    Metrics* metrics = nullptr;
    std::unique_ptr<GrammarCache> grammars;     // response_format's compiled grammars
    std::atomic<bool> cancel_all{false};    // shutdown past its grace period
};

struct GenerationJob {
    std::vector<int32_t> prompt;            // with images: each pad already expanded to its image's positions
    // Images (k3-chat.md §10), in pad order: their bytes, and the prompt as
    // rendered (one pad each), which the library's expansion must turn into
    // `prompt` once the images are queued.
    std::vector<std::string> images;
    std::vector<int32_t> rendered_prompt;
    SamplingParams params;
    std::vector<int32_t> stop_ids;          // end the reply (not part of it)
    std::unique_ptr<ReplyReader> reader;
    std::unique_ptr<ConstrainedReply> constraint;  // null: unconstrained (the loop is as without one)
};

// What one token (or the end) added, after stop strings.
struct StepOutput {
    ReplyDelta delta;
    const TokenChoice* choice = nullptr;    // null for the final flush
};

struct Outcome {
    std::string finish_reason;              // "stop", "length", "tool_calls"
    nlohmann::json message;                 // §12.6, content after stop strings
    uint32_t prompt_tokens = 0;
    uint32_t reused_tokens = 0;             // resumed from a stored prompt
    uint32_t completion_tokens = 0;
    std::vector<TokenChoice> choices;       // every generated token, for logprobs
    waste_session_stats stats{};            // this request's engine counters
    double ms = 0;
    bool client_gone = false;
};

// Returns false when the client went away: generation stops at once.
using StepSink = std::function<bool(const StepOutput&)>;

// The largest number of tokens the reply may have, or an ApiError
// (context_length_exceeded) when the prompt leaves no room.
uint32_t completion_budget(const Engine& engine, const GenerationJob& job);

// Runs a job on a slot's session. Throws ApiError (500 engine_error) when
// the engine fails; the session is then reset and the server goes on.
Outcome generate(Engine& engine, size_t slot, GenerationJob& job, const StepSink& sink);

// OpenAI-shaped usage and our "waste" object (§13.15-16).
nlohmann::json usage_json(const Outcome& outcome);
nlohmann::json waste_json(const Engine& engine, const Outcome& outcome);

// A token's text as the tokenizer spells it (specials by name).
std::string token_text(const Engine& engine, int32_t token);

}  // namespace waste_serve
