#include "model/routers.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "kernels/elementwise.h"
#include "platform/error.h"

namespace waste::model {
namespace {

// Top-k over the scores, within the best groups when n_group > 1; ties to the lower id.
std::vector<int> select_experts(const format::ModelConfig& c, const float* biased) {
    const int experts = c.experts;
    std::vector<char> allowed(experts, 1);
    if (c.expert_groups > 1) {
        const int per_group = experts / c.expert_groups;
        std::vector<float> group_score(c.expert_groups);
        for (int g = 0; g < c.expert_groups; ++g) {
            // sum of the top-2 scores in the group (a one-expert group scores its one)
            float first = -INFINITY, second = -INFINITY;
            for (int e = g * per_group; e < (g + 1) * per_group; ++e) {
                if (biased[e] > first) {
                    second = first;
                    first = biased[e];
                } else if (biased[e] > second) second = biased[e];
            }
            group_score[g] = per_group >= 2 ? first + second : first;
        }
        std::vector<int> order(c.expert_groups);
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return group_score[a] > group_score[b]; });
        std::fill(allowed.begin(), allowed.end(), 0);
        for (int i = 0; i < c.top_groups; ++i)
            for (int e = order[i] * per_group; e < (order[i] + 1) * per_group; ++e) allowed[e] = 1;
    }
    std::vector<int> candidates;
    for (int e = 0; e < experts; ++e)
        if (allowed[e]) candidates.push_back(e);
    std::partial_sort(candidates.begin(), candidates.begin() + c.top_k, candidates.end(),
                      [&](int a, int b) { return biased[a] > biased[b] || (biased[a] == biased[b] && a < b); });
    candidates.resize(c.top_k);
    return candidates;
}

// softmax over all experts in place: max-shifted f32 exponentials, their sum in double.
void softmax(float* x, size_t n) {
    const float max_logit = *std::max_element(x, x + n);
    double total = 0;
    for (size_t e = 0; e < n; ++e) {
        x[e] = std::exp(x[e] - max_logit);
        total += x[e];
    }
    for (size_t e = 0; e < n; ++e) x[e] = static_cast<float>(x[e] / total);
}

}  // namespace

void selection_scores(const format::ModelConfig& c, const float* bias, float* logits) {
    const size_t experts = c.experts;
    switch (c.router) {
        case format::RouterKind::sigmoid_grouped:
            for (size_t e = 0; e < experts; ++e) logits[e] = kernels::sigmoid(logits[e]) + bias[e];
            return;
        case format::RouterKind::softmax_topk: softmax(logits, experts); return;
        case format::RouterKind::topk_softmax:
            for (size_t e = 0; e < experts; ++e) logits[e] += bias[e];
            return;
    }
    WASTE_CHECK(false);
}

void route_token(const format::ModelConfig& c, const float* bias, float* logits, float* scratch, std::vector<int>* chosen,
                 float* weights) {
    const size_t experts = c.experts, top_k = c.top_k;
    float* gate = logits;  // the values that weight the chosen experts
    if (c.router == format::RouterKind::topk_softmax) {
        for (size_t e = 0; e < experts; ++e) gate[e] += bias[e];
        *chosen = select_experts(c, gate);
        const float top = gate[(*chosen)[0]];  // the largest (selection order)
        double total = 0;
        for (size_t j = 0; j < top_k; ++j) {
            weights[j] = std::exp(gate[(*chosen)[j]] - top);
            total += weights[j];
        }
        for (size_t j = 0; j < top_k; ++j) weights[j] = static_cast<float>(weights[j] / total);
        return;
    }
    if (c.router == format::RouterKind::sigmoid_grouped) {
        for (size_t e = 0; e < experts; ++e) {
            gate[e] = kernels::sigmoid(gate[e]);
            scratch[e] = gate[e] + bias[e];
        }
        *chosen = select_experts(c, scratch);
    } else {
        softmax(gate, experts);  // ranks and weights alike; one group, no bias
        *chosen = select_experts(c, gate);
    }
    double sum = 0;
    for (size_t j = 0; j < top_k; ++j) sum += gate[(*chosen)[j]];
    for (size_t j = 0; j < top_k; ++j) {
        float weight = gate[(*chosen)[j]];
        if (c.renormalize) weight = static_cast<float>(weight / (sum + 1e-20));
        weights[j] = weight * static_cast<float>(c.routed_scaling);
    }
}

}  // namespace waste::model
