// sampling_params.h — the generation fields a request may carry, read and
// validated (k3-chat.md §13.7–11; penalties, min_p and logprobs as OpenAI
// defines them). Only known fields are checked; unknown ones are ignored.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace waste_serve {

// Why these bounds: OpenAI's documented ranges, so a request valid there is
// valid here and one refused there is refused here.
constexpr int kMaxStopStrings = 4;
constexpr int kMaxTopLogprobs = 20;
constexpr size_t kMaxStopStringBytes = 1024;
// logit_bias: OpenAI's -100..100 per token; at most this many tokens (a
// bound on the request's work, 300 being what OpenAI's API documents).
constexpr size_t kMaxLogitBiasTokens = 300;
constexpr double kMaxLogitBias = 100;

// What a request that names no temperature, top_p, top_k or min_p samples
// with: the server's --temp/--top-p/--top-k/--min-p, else the model's
// (waste_model_sampling_defaults: its release's generation_config.json,
// else the engine's). This departs from k3-chat.md §13.7's greedy default,
// as llama.cpp's server does: clients that send no temperature (many) got
// repetitive loops (docs/SERVE.md, "Sampling").
struct SamplingDefaults {
    double temperature = 0;
    double top_p = 1;
    uint32_t top_k = 0;
    double min_p = 0;
};

struct SamplingParams {
    double temperature = 0;
    double top_p = 1;
    uint32_t top_k = 0;
    double min_p = 0;
    std::optional<uint64_t> seed;
    double frequency_penalty = 0;
    double presence_penalty = 0;
    std::optional<uint32_t> max_tokens;  // none: the server's --max-tokens
    std::vector<std::string> stop;
    bool stream = false;
    bool include_usage = false;
    bool logprobs = false;
    uint32_t top_logprobs = 0;
    std::vector<std::pair<int32_t, float>> logit_bias;  // token id, added to its logit before sampling
};

enum class Endpoint { chat, completion };

// Throws ApiError (400) naming the field and the value. vocabulary: the
// tokenizer's token count, the bound on the ids logit_bias may name.
// Fields the request does not name take `defaults`.
SamplingParams read_sampling_params(const nlohmann::json& request, Endpoint endpoint, uint32_t vocabulary,
                                    const SamplingDefaults& defaults);

}  // namespace waste_serve
