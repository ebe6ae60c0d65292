#include "runtime/sampler.h"

#include <algorithm>
#include <cmath>

#include "platform/error.h"

namespace waste::runtime {

int32_t argmax_logit(std::span<const float> logits) {
    if (logits.empty()) fail(WASTE_ERR_INVALID_ARGUMENT, "sampler: empty logits");
    size_t best = 0;
    for (size_t i = 0; i < logits.size(); ++i) {
        if (std::isnan(logits[i])) fail(WASTE_ERR_INTERNAL, "sampler: the logit of token {} is NaN", i);
        if (logits[i] > logits[best]) best = i;
    }
    return static_cast<int32_t>(best);
}

double log_softmax_at(std::span<const float> logits, int32_t id) {
    WASTE_CHECK(id >= 0 && static_cast<size_t>(id) < logits.size());
    const double max_logit = *std::max_element(logits.begin(), logits.end());
    double total = 0;
    for (float logit : logits) total += std::exp(static_cast<double>(logit) - max_logit);
    return static_cast<double>(logits[id]) - max_logit - std::log(total);
}

Sampler::Sampler(const SamplerOptions& options) : options_(options), random_(options.seed) {
    if (!(options.temperature >= 0 && options.temperature <= max_temperature))
        fail(WASTE_ERR_INVALID_ARGUMENT, "sampler: temperature {} is outside [0, {}]", options.temperature, max_temperature);
    if (!(options.top_p > 0 && options.top_p <= 1))
        fail(WASTE_ERR_INVALID_ARGUMENT, "sampler: top_p {} is outside (0, 1]", options.top_p);
    if (!(options.min_p >= 0 && options.min_p <= 1))
        fail(WASTE_ERR_INVALID_ARGUMENT, "sampler: min_p {} is outside [0, 1]", options.min_p);
}

double Sampler::truncate(std::span<const float> logits) {
    const int32_t best = argmax_logit(logits);  // also rejects NaN
    const double max_logit = logits[best];
    const double inverse_temperature = 1.0 / options_.temperature;
    all_weights_.resize(logits.size());
    double total = 0;  // over every token: the top-p base when there is no top-k
    for (size_t i = 0; i < logits.size(); ++i) {
        all_weights_[i] = std::exp((static_cast<double>(logits[i]) - max_logit) * inverse_temperature);
        total += all_weights_[i];
    }
    // Without top-k, tokens that cannot survive need not be sorted (a large
    // vocabulary's sort dominates the cost): min-p drops every weight below
    // min_p (the maximum weight is exactly 1), and top-p's prefix lies within
    // the tokens of weight >= t as soon as they hold top_p of the mass.
    double floor = options_.min_p;
    if (options_.top_k == 0 && options_.top_p < 1)
        for (double t = 1e-1; t >= 1e-12; t *= 1e-1) {
            if (t <= floor) break;
            double mass = 0;
            for (double w : all_weights_) mass += w >= t ? w : 0;
            if (mass >= options_.top_p * total) {
                floor = t;
                break;
            }
        }
    if (options_.top_k > 0) floor = 0;  // top-p's base is then the top-k survivors: keep them all
    kept_.clear();
    // Tokens whose weight underflows to 0 (or a -inf logit) can never be drawn.
    for (size_t i = 0; i < logits.size(); ++i)
        if (all_weights_[i] > 0 && all_weights_[i] >= floor) kept_.push_back(static_cast<int32_t>(i));
    auto order = [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
    if (options_.top_k > 0 && options_.top_k < kept_.size()) {
        std::partial_sort(kept_.begin(), kept_.begin() + options_.top_k, kept_.end(), order);
        kept_.resize(options_.top_k);
    } else {
        std::sort(kept_.begin(), kept_.end(), order);
    }
    weights_.resize(kept_.size());
    for (size_t i = 0; i < kept_.size(); ++i) weights_[i] = all_weights_[kept_[i]];
    if (options_.top_k > 0) {
        total = 0;
        for (double w : weights_) total += w;
    }
    size_t keep = kept_.size();
    if (options_.top_p < 1) {
        double cumulative = 0;
        for (size_t i = 0; i < keep; ++i) {
            cumulative += weights_[i];
            if (cumulative >= options_.top_p * total) {
                keep = i + 1;
                break;
            }
        }
    }
    // weights_[0] is the maximum, exactly 1 (exp(0)).
    if (options_.min_p > 0)
        for (size_t i = 1; i < keep; ++i)
            if (weights_[i] < options_.min_p * weights_[0]) {
                keep = i;
                break;
            }
    kept_.resize(keep);
    weights_.resize(keep);
    double kept_total = 0;
    for (double w : weights_) kept_total += w;
    return kept_total;
}

std::vector<Candidate> Sampler::candidates(std::span<const float> logits) {
    if (options_.temperature == 0) return {Candidate{argmax_logit(logits), 1.0}};
    const double total = truncate(logits);
    std::vector<Candidate> out(kept_.size());
    for (size_t i = 0; i < kept_.size(); ++i) out[i] = Candidate{kept_[i], weights_[i] / total};
    return out;
}

SampledToken Sampler::sample(std::span<const float> logits) {
    SampledToken chosen;
    if (options_.temperature == 0) {
        chosen.id = argmax_logit(logits);
    } else {
        const double total = truncate(logits);
        const double target = random_.unit() * total;  // unit() is in (0, 1)
        double cumulative = 0;
        chosen.id = kept_.back();  // rounding can leave the walk short of the target
        for (size_t i = 0; i < kept_.size(); ++i) {
            cumulative += weights_[i];
            if (cumulative > target) {
                chosen.id = kept_[i];
                break;
            }
        }
    }
    chosen.logprob = log_softmax_at(logits, chosen.id);
    return chosen;
}

}  // namespace waste::runtime
