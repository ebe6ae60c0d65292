// routers.h — the MoE router kinds (format::RouterKind), one token at a time:
// from the router's logits to the chosen experts and their weights.
//
// sigmoid_grouped (Kimi, DeepSeek-V3 / K2; models.md §4): s = sigmoid(logit);
// the experts are ranked by s + bias (the correction bias selects, it never
// weights), within the top_groups best expert groups when n_group > 1 (a
// group scores the sum of its top two; dropped groups never win); weights s,
// renormalised to sum 1 when asked, times routed_scaling_factor.
//
// softmax_topk (Qwen3-MoE; other-families.md §4): p = softmax(logits) over
// all experts; the top_k by p; weights p, renormalised when norm_topk_prob.
//
// topk_softmax (gpt-oss; other-families.md §8, HF GptOssTopKRouter): l =
// logits + the router's bias (a real bias: it weights as well as selects);
// the top_k by l; weights softmax over those k values (max-shifted f32
// exponentials, their sum in double).
//
// Ties go to the lower expert id in all kinds. selection_scores() is what a kind
// ranks by, so router lookahead (router_lookahead.cpp) predicts with the
// very scores the MoE step then selects by.
#pragma once

#include <cstddef>
#include <vector>

#include "format/model_config.h"

namespace waste::model {

// In place: logits [experts] -> the scores the kind ranks by (sigmoid plus
// bias, the softmax probabilities, or logits plus bias). bias: [experts]
// (unused by softmax_topk).
void selection_scores(const format::ModelConfig& config, const float* bias, float* logits);

// One token's routing. logits [experts] is overwritten and scratch [experts]
// used; chosen gets top_k expert ids in selection order, weights [top_k]
// their weights.
void route_token(const format::ModelConfig& config, const float* bias, float* logits, float* scratch,
                 std::vector<int>* chosen, float* weights);

}  // namespace waste::model
