// model_config_test.cpp — the config reader's family rules (docs/FORMAT.md,
// "Other families"): which layers are MoE, the attention and router kinds a
// model_type implies, and what is refused by name.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "format/model_config.h"
#include "platform/error.h"

namespace {

using nlohmann::json;
using waste::format::Family;
using waste::format::LayerKind;
using waste::format::ModelConfig;
using waste::format::RouterKind;

// Qwen3-30B-A3B's keys at a tiny size.
json qwen3(json overrides = json::object()) {
    json c = {{"model_type", "qwen3_moe"}, {"hidden_size", 64}, {"num_hidden_layers", 4},
              {"num_attention_heads", 4}, {"num_key_value_heads", 2}, {"head_dim", 32},
              {"intermediate_size", 96}, {"moe_intermediate_size", 32}, {"num_experts", 8},
              {"num_experts_per_tok", 2}, {"decoder_sparse_step", 1}, {"mlp_only_layers", json::array()},
              {"rope_theta", 1e6}, {"rms_norm_eps", 1e-6}, {"vocab_size", 100}, {"attention_bias", false},
              {"use_sliding_window", false}, {"sliding_window", nullptr}, {"rope_scaling", nullptr}};
    c.update(overrides);
    return c;
}

// The status and message of parsing `config`, or WASTE_OK.
std::pair<waste_status, std::string> refusal(const json& config) {
    try {
        waste::format::parse_model_config(config);
    } catch (const waste::Error& e) {
        return {e.status(), e.what()};
    }
    return {WASTE_OK, ""};
}

std::vector<int> moe_layers(const ModelConfig& c) {
    std::vector<int> layers;
    for (int l = 0; l < c.layers; ++l)
        if (c.is_moe_layer(l)) layers.push_back(l);
    return layers;
}

TEST(ModelConfig, Qwen3IsGqaWithASoftmaxRouter) {
    const ModelConfig c = waste::format::parse_model_config(qwen3());
    EXPECT_EQ(c.family, Family::qwen3);
    EXPECT_EQ(c.router, RouterKind::softmax_topk);
    EXPECT_EQ(c.layer_kinds, std::vector<LayerKind>(4, LayerKind::gqa));
    EXPECT_EQ(c.gqa_layer_count(), 4);
    EXPECT_EQ(c.kv_heads, 2);
    EXPECT_EQ(c.head_dim, 32);
    EXPECT_FALSE(c.rope_interleave);  // NEOX pairs
    EXPECT_FALSE(c.renormalize);      // norm_topk_prob's default in HF's Qwen3MoeConfig
    EXPECT_EQ(moe_layers(c), (std::vector<int>{0, 1, 2, 3}));
    EXPECT_TRUE(waste::format::parse_model_config(qwen3({{"norm_topk_prob", true}})).renormalize);
    // head_dim defaults to hidden / heads, num_key_value_heads to the heads
    json plain = qwen3();
    plain.erase("head_dim");
    plain.erase("num_key_value_heads");
    const ModelConfig p = waste::format::parse_model_config(plain);
    EXPECT_EQ(p.head_dim, 16);
    EXPECT_EQ(p.kv_heads, 4);
}

TEST(ModelConfig, Qwen3DenseLayersFollowSparseStepAndMlpOnlyLayers) {
    const ModelConfig step = waste::format::parse_model_config(qwen3({{"decoder_sparse_step", 2}}));
    EXPECT_EQ(moe_layers(step), (std::vector<int>{1, 3}));
    EXPECT_EQ(step.moe_ordinal(3), 1);
    EXPECT_EQ(step.moe_ordinal(2), -1);
    EXPECT_EQ(step.dense_layer_count(), 2);
    const ModelConfig only = waste::format::parse_model_config(qwen3({{"mlp_only_layers", {0, 2}}}));
    EXPECT_EQ(moe_layers(only), (std::vector<int>{1, 3}));
    const ModelConfig none = waste::format::parse_model_config(qwen3({{"num_experts", 0}, {"num_experts_per_tok", 0}}));
    EXPECT_FALSE(none.has_moe());
    EXPECT_EQ(refusal(qwen3({{"mlp_only_layers", {4}}})).first, WASTE_ERR_FORMAT);
    // a dense layer needs intermediate_size
    json no_inter = qwen3({{"mlp_only_layers", {1}}});
    no_inter.erase("intermediate_size");
    EXPECT_NE(refusal(no_inter).second.find("intermediate_size"), std::string::npos);
}

TEST(ModelConfig, KimiAndDeepSeekDenseLayersAreTheFirstK) {
    const json kimi = {{"model_type", "kimi_linear"}, {"hidden_size", 64}, {"num_hidden_layers", 3},
                       {"first_k_dense_replace", 1}, {"intermediate_size", 96}, {"moe_intermediate_size", 32},
                       {"num_experts", 8}, {"num_experts_per_token", 2}, {"vocab_size", 100},
                       {"num_attention_heads", 2}, {"kv_lora_rank", 16}, {"qk_nope_head_dim", 8},
                       {"v_head_dim", 8}};
    const ModelConfig c = waste::format::parse_model_config(kimi);
    EXPECT_EQ(c.router, RouterKind::sigmoid_grouped);
    EXPECT_TRUE(c.renormalize);
    EXPECT_EQ(moe_layers(c), (std::vector<int>{1, 2}));
    EXPECT_EQ(c.moe_ordinal(1), 0);
    EXPECT_EQ(c.gqa_layer_count(), 0);
}

TEST(ModelConfig, Qwen3RefusesWhatTheEngineDoesNotRunByName) {
    struct Case {
        json overrides;
        std::string names;
    };
    const Case cases[] = {
        {{{"attention_bias", true}}, "attention_bias"},
        {{{"use_sliding_window", true}}, "use_sliding_window"},
        {{{"scoring_func", "sigmoid"}}, "scoring_func"},
        {{{"rope_scaling", {{"type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 32768}}}},
         "rope_scaling"},
        {{{"rope_scaling", {{"type", "linear"}, {"factor", 4.0}}}}, "rope_scaling"},
        {{{"first_k_dense_replace", 1}}, "first_k_dense_replace"},
        {{{"n_shared_experts", 1}}, "shared experts"},
        {{{"shared_expert_intermediate_size", 64}}, "shared experts"},
        {{{"n_group", 2}, {"topk_group", 1}}, "n_group"},
        {{{"routed_scaling_factor", 2.5}}, "routed_scaling_factor"},
        {{{"hidden_act", "situ"}}, "hidden_act"},
    };
    for (const Case& c : cases) {
        const auto [status, message] = refusal(qwen3(c.overrides));
        EXPECT_EQ(status, WASTE_ERR_UNSUPPORTED) << c.overrides.dump() << ": " << message;
        EXPECT_NE(message.find(c.names), std::string::npos) << message;
    }
    const auto [status, message] = refusal(qwen3({{"num_key_value_heads", 3}}));
    EXPECT_EQ(status, WASTE_ERR_FORMAT);
    EXPECT_NE(message.find("num_key_value_heads"), std::string::npos) << message;
    EXPECT_EQ(refusal(qwen3({{"head_dim", 15}})).first, WASTE_ERR_FORMAT);  // odd: RoPE rotates pairs
    EXPECT_EQ(refusal(qwen3({{"head_dim", 1026}})).first, WASTE_ERR_FORMAT);  // beyond RoPE's angle table
}

TEST(ModelConfig, AnUnknownModelTypeIsRefusedNamingTheKnownOnes) {
    const auto [status, message] = refusal(qwen3({{"model_type", "qwen2_moe"}}));
    EXPECT_EQ(status, WASTE_ERR_UNSUPPORTED);
    EXPECT_NE(message.find("\"qwen2_moe\""), std::string::npos) << message;
    EXPECT_NE(message.find("qwen3_moe"), std::string::npos) << message;
}

}  // namespace
