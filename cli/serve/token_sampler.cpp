#include "token_sampler.h"

#include <algorithm>
#include <cmath>

#include "api_error.h"

namespace waste_serve {

TokenSampler::TokenSampler(const SamplingParams& params, uint64_t seed)
    : frequency_penalty_(params.frequency_penalty),
      presence_penalty_(params.presence_penalty),
      logit_bias_(params.logit_bias),
      logprobs_(params.logprobs),
      top_logprobs_(params.logprobs ? params.top_logprobs : 0) {
    waste_sampler_options options;
    waste_sampler_options_init(&options);
    options.temperature = params.temperature;
    options.top_p = params.top_p;
    options.top_k = params.top_k;
    options.min_p = params.min_p;
    options.seed = seed;
    waste_error error{};
    if (waste_sampler_create(&options, &sampler_, &error) != WASTE_OK) throw bad_request(error.message);
}

TokenSampler::~TokenSampler() { waste_sampler_free(sampler_); }

bool TokenSampler::pick(const float* logits, size_t vocab, TokenChoice& out, waste_error& error, const float* masked) {
    const float* sample_from = masked ? masked : logits;
    const bool penalised = !counts_.empty() && (frequency_penalty_ != 0 || presence_penalty_ != 0);
    if (penalised || !logit_bias_.empty()) {
        scratch_.assign(sample_from, sample_from + vocab);
        // OpenAI: mu[j] -= c[j] * frequency_penalty + (c[j] > 0) * presence_penalty.
        if (penalised)
            for (const auto& [token, count] : counts_)
                if (static_cast<size_t>(token) < vocab)
                    scratch_[token] -= static_cast<float>(count * frequency_penalty_ + presence_penalty_);
        // A grammar's -infinity stays -infinity: a bias cannot allow a refused token.
        for (const auto& [token, bias] : logit_bias_)
            if (static_cast<size_t>(token) < vocab) scratch_[token] += bias;
        sample_from = scratch_.data();
    }
    if (waste_sampler_sample(sampler_, sample_from, vocab, &out.token, nullptr, &error) != WASTE_OK) return false;
    ++counts_[out.token];
    fill_logprobs(logits, vocab, out);
    return true;
}

void TokenSampler::force(const float* logits, size_t vocab, int32_t token, TokenChoice& out) {
    out.token = token;
    ++counts_[token];
    fill_logprobs(logits, vocab, out);
}

void TokenSampler::fill_logprobs(const float* logits, size_t vocab, TokenChoice& out) const {
    out.top.clear();
    // Only a client that asked pays for them: a pass of exp in double over
    // the whole vocabulary (163,840 ids for K3) on every token.
    if (!logprobs_) return;

    // Log-probabilities of the model itself (raw logits), computed in double.
    double max_logit = -INFINITY;
    for (size_t i = 0; i < vocab; ++i) max_logit = std::max(max_logit, static_cast<double>(logits[i]));
    double sum = 0;
    for (size_t i = 0; i < vocab; ++i) sum += std::exp(static_cast<double>(logits[i]) - max_logit);
    const double log_z = max_logit + std::log(sum);
    out.logprob = static_cast<float>(logits[out.token] - log_z);
    if (top_logprobs_ > 0) {
        std::vector<int32_t> ids(vocab);
        for (size_t i = 0; i < vocab; ++i) ids[i] = static_cast<int32_t>(i);
        const size_t k = std::min<size_t>(top_logprobs_, vocab);
        std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(k), ids.end(), [&](int32_t a, int32_t b) {
            return logits[a] != logits[b] ? logits[a] > logits[b] : a < b;
        });
        for (size_t i = 0; i < k; ++i) out.top.emplace_back(ids[i], static_cast<float>(logits[ids[i]] - log_z));
    }
}

}  // namespace waste_serve
