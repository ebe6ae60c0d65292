#include "format/families.h"

#include "platform/error.h"

namespace waste::format {

const std::vector<FamilyTraits>& families() {
    // other-families.md §0 (DeepSeek / K2), §4 (Qwen3), §7 (GLM-4.5), §8 (gpt-oss); models.md (Kimi);
    // families-2026.md §1 (Qwen3.5), §3 (MiniMax-M2), §6 (Mistral 4)
    static const std::vector<FamilyTraits> table = {
        {Family::kimi, {{"kimi_linear", ""}, {"kimi_k3", ""}}, RouterKind::sigmoid_grouped, "sigmoid", true, 0,
         MoeLayout::first_k_dense, false, true, "block_sparse_moe.", "moe_intermediate_size"},
        {Family::deepseek, {{"deepseek_v3", "deepseek-v3"}, {"kimi_k2", "kimi-k2"}}, RouterKind::sigmoid_grouped,
         "sigmoid", true, 0, MoeLayout::first_k_dense, false, false, "mlp.", "moe_intermediate_size"},
        {Family::qwen3, {{"qwen3_moe", "qwen3-moe"}}, RouterKind::softmax_topk, "softmax", false, 0,
         MoeLayout::sparse_step, false, false, "mlp.", "moe_intermediate_size"},
        {Family::glm4, {{"glm4_moe", "glm4-moe"}}, RouterKind::sigmoid_grouped, "sigmoid", true, 1,
         MoeLayout::first_k_dense, true, false, "mlp.", "moe_intermediate_size"},
        {Family::gpt_oss, {{"gpt_oss", "gpt-oss"}}, RouterKind::topk_softmax, "softmax", true, 0, MoeLayout::every_layer,
         false, false, "mlp.", "intermediate_size"},
        // families-2026.md §3: the V3 router with one group, no scaling, no shared expert
        {Family::minimax_m2, {{"minimax_m2", "minimax-m2"}}, RouterKind::sigmoid_grouped, "sigmoid", true, 0,
         MoeLayout::every_layer, false, false, "block_sparse_moe.", "intermediate_size", "e_score_correction_bias"},
        // families-2026.md §6: DeepSeek-V3's MLA and layout, a softmax router (top-k, renormalised), one shared
        // expert by default, the query temperature (ModelConfig::query_temperature)
        {Family::mistral4, {{"mistral4", "mistral4"}}, RouterKind::softmax_topk, "softmax", true, 1,
         MoeLayout::first_k_dense, false, false, "mlp.", "moe_intermediate_size"},
        // families-2026.md §1: Qwen3's softmax router, renormalised, every layer MoE, one gated shared expert
        // (mlp.shared_expert.); the multimodal release's text config is qwen3_5_moe_text; Qwen3-Next is the
        // same model with its projections grouped per key head (the converter ungroups them)
        {Family::qwen35, {{"qwen3_5_moe", "qwen35moe"}, {"qwen3_5_moe_text", "qwen35moe"}, {"qwen3_next", "qwen3next"}},
         RouterKind::softmax_topk,
         "softmax", true, 1, MoeLayout::every_layer, false, false, "mlp.", "moe_intermediate_size",
         "gate.e_score_correction_bias", "shared_expert."},
    };
    return table;
}

const FamilyTraits& traits_of(Family family) {
    for (const FamilyTraits& f : families())
        if (f.family == family) return f;
    WASTE_CHECK(false);
    return families().front();
}

const FamilyTraits* family_of_model_type(std::string_view model_type) {
    for (const FamilyTraits& f : families())
        for (const ModelType& t : f.model_types)
            if (t.name == model_type) return &f;
    return nullptr;
}

std::string known_model_types() {
    std::string out;
    for (const FamilyTraits& f : families())
        for (const ModelType& t : f.model_types) out += (out.empty() ? "" : ", ") + std::string(t.name);
    return out;
}

const char* moe_block_prefix(Family family) { return traits_of(family).moe_block.data(); }

}  // namespace waste::format
