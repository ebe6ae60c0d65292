// token_sampler.h — one request's token picking: OpenAI's frequency and
// presence penalties over the tokens generated so far and its logit_bias,
// then the library's sampler (temperature, top_k, top_p, min_p, seed:
// docs/CLI.md "Sampling"), and the log-probabilities a client asked for,
// from the raw logits.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sampling_params.h"
#include "waste/waste.h"

namespace waste_serve {

struct TokenChoice {
    int32_t token = -1;
    float logprob = 0;  // log-softmax of the raw logits (before penalties, logit_bias and temperature); only with logprobs
    std::vector<std::pair<int32_t, float>> top;  // the top_logprobs most likely, most likely first
};

class TokenSampler {
public:
    // Throws ApiError when the library refuses an option.
    TokenSampler(const SamplingParams& params, uint64_t seed);
    ~TokenSampler();
    TokenSampler(const TokenSampler&) = delete;
    TokenSampler& operator=(const TokenSampler&) = delete;

    // Picks the next token from the session's logits and remembers it for
    // the penalties. Returns false (error filled) when the library fails.
    // masked (may be null): the logits to sample from instead, with the
    // tokens a grammar refuses at -infinity; the log-probabilities are still
    // the model's own, from logits.
    bool pick(const float* logits, size_t vocab, TokenChoice& out, waste_error& error, const float* masked = nullptr);
    // A token emitted without sampling (a constrained reply's forced
    // markup): remembered for the penalties, with its log-probabilities.
    void force(const float* logits, size_t vocab, int32_t token, TokenChoice& out);

private:
    void fill_logprobs(const float* logits, size_t vocab, TokenChoice& out) const;

    waste_sampler* sampler_ = nullptr;
    double frequency_penalty_;
    double presence_penalty_;
    std::vector<std::pair<int32_t, float>> logit_bias_;
    bool logprobs_;           // the client asked for log-probabilities
    uint32_t top_logprobs_;
    std::unordered_map<int32_t, uint32_t> counts_;  // generated tokens so far
    std::vector<float> scratch_;
};

}  // namespace waste_serve
