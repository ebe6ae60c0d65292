// sampler.h — picks the next token from a logits vector: greedy, or a
// seeded draw after temperature, top-k, top-p and min-p truncation.
//
// The definition (the tests hold a straightforward reference to it):
//   - temperature 0: the argmax (ties: the lower id). No random number drawn.
//   - temperature T > 0: p_i = softmax(logits / T). Candidates are ordered by
//     logit, highest first, ties by lower id. Then, in this order:
//       top-k (k > 0): keep the first k;
//       top-p (p < 1): of those, keep the shortest prefix whose probability,
//         renormalised over the top-k survivors, sums to >= p;
//       min-p (m > 0): keep those with p_i >= m * max p (a ratio, so it does
//         not matter over what the probabilities are normalised);
//     every filter keeps a prefix, and at least the most likely token. The
//     survivors are renormalised and one is drawn with a uniform number from
//     the sampler's own PRNG (splitmix64, cache_random.h): the same seed and
//     logits give the same tokens on every machine with the same libm —
//     never a std:: distribution, whose output differs between libraries.
//   - The log-probability reported is the model's own: log-softmax of the raw
//     logits (before temperature and truncation), the same whatever the
//     sampling settings, so greedy and sampled runs report comparable values.
//
// Not here: stop conditions and text (runtime/generate.h, text/).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "runtime/cache_random.h"

namespace waste::runtime {

struct SamplerOptions {
    double temperature = 0;  // 0 = greedy; at most max_temperature
    uint32_t top_k = 0;      // 0 = off
    double top_p = 1;        // (0, 1]; 1 = off
    double min_p = 0;        // [0, 1]; 0 = off
    uint64_t seed = 0;
};

// What a generation samples with when neither the request nor the model's
// release names a field (llama.cpp's temperature and top-p; no top-k, no
// min-p). waste_model_sampling_defaults lays a release's
// generation_config.json over it.
inline constexpr SamplerOptions engine_sampling_defaults{0.8, 0, 0.95, 0.0, 0};

constexpr double max_temperature = 100;  // beyond this every token is equally likely to the bit

struct SampledToken {
    int32_t id = -1;
    double logprob = 0;  // log-softmax of the raw logits at id
};

struct Candidate {
    int32_t id = -1;
    double probability = 0;  // after truncation, renormalised over the survivors
};

class Sampler {
public:
    // Throws WASTE_ERR_INVALID_ARGUMENT naming an out-of-range option.
    explicit Sampler(const SamplerOptions& options);

    SampledToken sample(std::span<const float> logits);
    // The survivors of truncation with their probabilities, in candidate
    // order (greedy: the argmax alone, probability 1).
    std::vector<Candidate> candidates(std::span<const float> logits);
    const SamplerOptions& options() const { return options_; }

private:
    // Fills kept_ (ids in candidate order) and weights_ (unnormalised), returns their sum.
    double truncate(std::span<const float> logits);

    SamplerOptions options_;
    SplitMix64 random_;
    std::vector<int32_t> kept_;
    std::vector<double> weights_;
    std::vector<double> all_weights_;  // [vocab] exp((logit - max) / T)
};

// The argmax (ties: the lower id); throws for an empty vector or a NaN logit.
int32_t argmax_logit(std::span<const float> logits);
// log softmax(logits)[id] in double precision.
double log_softmax_at(std::span<const float> logits, int32_t id);

}  // namespace waste::runtime
