// model_families_test.cpp — the parts the other families (issue 16) add,
// checked by hand: RoPE frequencies under YaRN and the two pairings
// (other-families.md §0), the MLA softmax scale's mscale², and the config
// rules (family from model_type, RoPE defaults, refused kinds; Qwen3-MoE's
// GQA keys, router kind and dense layers from decoder_sparse_step /
// mlp_only_layers, first_k_dense_replace's for Kimi and DeepSeek; GLM-4.5's
// partial rotary dims, q/k/v biases, optional q/k norm and HF defaults;
// gpt-oss's keys, its top-k-then-softmax router and clamped SwiGLU by hand).
//
// Tolerances: 1e-12 relative on double-precision frequencies computed the
// same way by hand; 5e-5 on the M² constants (the document rounds them to
// four decimals); 1e-6 on rotated f32 values of magnitude <= 2 (a few ulps).
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "format/families.h"
#include "format/model_config.h"
#include "format/trunk_tensors.h"
#include "kernels/elementwise.h"
#include "model/rope.h"
#include "model/routers.h"
#include "platform/error.h"

namespace waste {
namespace {

using nlohmann::json;

format::YarnScaling yarn(double factor, double m, double m_all) {
    format::YarnScaling y;
    y.factor = factor;
    y.original_max_position = 4096;
    y.mscale = m;
    y.mscale_all_dim = m_all;
    return y;
}

TEST(Rope, YarnFrequenciesByHand) {
    // dim 8, base 1e4, L0 4096, beta 32/1: corr(32) = 1.31 -> low 1,
    // corr(1) = 2.81 -> high 3, so the ramp over pairs 0..3 is 0, 0, 0.5, 1
    const format::YarnScaling y = yarn(40, 1, 1);
    const model::Rope rope(8, 10000.0, true, &y);
    const double expect[4] = {1.0, 0.1, 0.5 * 0.01 / 40 + 0.5 * 0.01, 0.001 / 40};
    ASSERT_EQ(rope.inv_freq().size(), 4u);
    for (int i = 0; i < 4; ++i) EXPECT_NEAR(rope.inv_freq()[i], expect[i], 1e-12 * expect[i]) << i;
    EXPECT_EQ(rope.attention_factor(), 1.0);  // mscale == mscale_all_dim
    const format::YarnScaling unequal = yarn(40, 1, 0.5);
    EXPECT_NEAR(model::Rope(8, 1e4, true, &unequal).attention_factor(),
                (1 + 0.1 * std::log(40.0)) / (1 + 0.05 * std::log(40.0)), 1e-12);
    const format::YarnScaling unset = yarn(32, 0, 0);  // gpt-oss: no mscale keys
    EXPECT_NEAR(model::Rope(8, 1e4, false, &unset).attention_factor(), 1 + 0.1 * std::log(32.0), 1e-12);
    const model::Rope plain(8, 10000.0, true, nullptr);
    for (int i = 0; i < 4; ++i) EXPECT_NEAR(plain.inv_freq()[i], std::pow(10000.0, -2.0 * i / 8), 1e-15);
}

TEST(Rope, PairsInterleavedOrByHalves) {
    // one head of 4 dims, base 1: every pair turns by `position` radians
    const model::Rope interleaved(4, 1.0, true, nullptr), halves(4, 1.0, false, nullptr);
    const float c = std::cos(1.0f), s = std::sin(1.0f);
    float a[4] = {1, 2, 3, 4}, b[4] = {1, 2, 3, 4};
    interleaved.apply(a, 1, 4, 1);  // pairs (0,1), (2,3)
    halves.apply(b, 1, 4, 1);       // pairs (0,2), (1,3)
    const float want_a[4] = {1 * c - 2 * s, 2 * c + 1 * s, 3 * c - 4 * s, 4 * c + 3 * s};
    const float want_b[4] = {1 * c - 3 * s, 2 * c - 4 * s, 3 * c + 1 * s, 4 * c + 2 * s};
    for (int i = 0; i < 4; ++i) {
        EXPECT_NEAR(a[i], want_a[i], 1e-6) << i;
        EXPECT_NEAR(b[i], want_b[i], 1e-6) << i;
    }
    float z[8] = {1, 2, 3, 4, 5, 6, 7, 8};  // position 0 is the identity, heads `stride` apart
    interleaved.apply(z, 2, 4, 0);
    for (int i = 0; i < 8; ++i) EXPECT_EQ(z[i], static_cast<float>(i + 1));
}

json deepseek(json extra = json::object()) {
    json c = {{"model_type", "deepseek_v3"}, {"hidden_size", 64}, {"num_hidden_layers", 2},
              {"first_k_dense_replace", 1}, {"intermediate_size", 64}, {"moe_intermediate_size", 32},
              {"n_routed_experts", 8}, {"num_experts_per_tok", 2}, {"n_shared_experts", 1}, {"vocab_size", 100},
              {"num_attention_heads", 2}, {"qk_nope_head_dim", 8}, {"qk_rope_head_dim", 8}, {"v_head_dim", 8},
              {"kv_lora_rank", 16}, {"q_lora_rank", 16}, {"rope_theta", 10000.0},
              {"rope_scaling", {{"type", "yarn"}, {"factor", 40.0}, {"original_max_position_embeddings", 4096},
                                {"mscale", 1.0}, {"mscale_all_dim", 1.0}}}};
    c.merge_patch(extra);
    return c;
}

waste_status status_of(const json& config, std::string* message) {
    try {
        format::parse_model_config(config);
    } catch (const Error& e) {
        *message = e.what();
        return e.status();
    }
    return WASTE_OK;
}

TEST(FamilyConfig, DeepSeekGetsRopeAndYarn) {
    const format::ModelConfig c = format::parse_model_config(deepseek());
    EXPECT_EQ(c.family, format::Family::deepseek);
    EXPECT_TRUE(c.mla_rope);
    EXPECT_TRUE(c.rope_interleave);
    ASSERT_TRUE(c.yarn_enabled);
    EXPECT_EQ(c.yarn.factor, 40.0);
    EXPECT_EQ(c.yarn.beta_fast, 32.0);  // the defaults
    EXPECT_EQ(c.yarn.beta_slow, 1.0);
    EXPECT_STREQ(format::moe_block_prefix(c.family), "mlp.");
    // other-families.md §0: M² for V3 (f=40, m=1) 1.8739, V2-Lite (m=0.707) 1.5896, K2 (f=32) 1.8133
    EXPECT_NEAR(model::mla_softmax_scale_factor(c), 1.8739, 5e-5);
    EXPECT_NEAR(model::mla_softmax_scale_factor(format::parse_model_config(deepseek(
                    {{"rope_scaling", {{"mscale", 0.707}, {"mscale_all_dim", 0.707}}}}))),
                1.5896, 5e-5);
    EXPECT_NEAR(model::mla_softmax_scale_factor(format::parse_model_config(deepseek({{"rope_scaling", {{"factor", 32.0}}}}))),
                1.8133, 5e-5);
    EXPECT_EQ(format::parse_model_config(deepseek({{"model_type", "kimi_k2"}})).family, format::Family::deepseek);
    EXPECT_FALSE(format::parse_model_config(deepseek({{"rope_scaling", nullptr}})).yarn_enabled);
}

TEST(FamilyConfig, KimiKeepsItsNopeMla) {
    for (const char* type : {"kimi_linear", "kimi_k3", ""}) {
        SCOPED_TRACE(type);
        json c = deepseek({{"model_type", type}, {"rope_scaling", nullptr}});
        if (std::string(type).empty()) c.erase("model_type");
        const format::ModelConfig m = format::parse_model_config(c);
        EXPECT_EQ(m.family, format::Family::kimi);
        EXPECT_FALSE(m.mla_rope);
        EXPECT_STREQ(format::moe_block_prefix(m.family), "block_sparse_moe.");
    }
    EXPECT_TRUE(format::parse_model_config(deepseek({{"model_type", "kimi_linear"}, {"mla_use_nope", false}})).mla_rope);
}

TEST(FamilyConfig, WhatTheEngineCannotRunIsRefusedByName) {
    struct Case {
        json patch;
        waste_status status;
        const char* names;
    };
    const Case cases[] = {
        {{{"model_type", "mixtral"}}, WASTE_ERR_UNSUPPORTED, "mixtral"},
        {{{"rope_scaling", {{"type", "linear"}}}}, WASTE_ERR_UNSUPPORTED, "linear"},
        {{{"rope_scaling", {{"type", nullptr}, {"rope_type", "llama3"}}}}, WASTE_ERR_UNSUPPORTED, "llama3"},
        {{{"scoring_func", "softmax"}}, WASTE_ERR_UNSUPPORTED, "softmax"},
        {{{"rope_scaling", {{"factor", 0.5}}}}, WASTE_ERR_FORMAT, "factor"},
        {{{"rope_scaling", {{"original_max_position_embeddings", nullptr}}}}, WASTE_ERR_FORMAT,
         "original_max_position_embeddings"},
        {{{"qk_rope_head_dim", 7}}, WASTE_ERR_FORMAT, "qk_rope_head_dim"},
        {{{"qk_rope_head_dim", 2048}}, WASTE_ERR_FORMAT, "qk_rope_head_dim"},
        {{{"rope_theta", -1.0}}, WASTE_ERR_FORMAT, "rope_theta"},
        {{{"rope_scaling", 3}}, WASTE_ERR_FORMAT, "rope_scaling"},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.patch.dump());
        std::string message;
        EXPECT_EQ(status_of(deepseek(c.patch), &message), c.status);
        EXPECT_NE(message.find(c.names), std::string::npos) << message;
    }
}

// ------------------------------------------------------------ Qwen3-MoE

using format::Family;
using format::LayerKind;
using format::ModelConfig;
using format::RouterKind;

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
        format::parse_model_config(config);
    } catch (const Error& e) {
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

TEST(FamilyConfig, Qwen3IsGqaWithASoftmaxRouter) {
    const ModelConfig c = format::parse_model_config(qwen3());
    EXPECT_EQ(c.family, Family::qwen3);
    EXPECT_EQ(c.router, RouterKind::softmax_topk);
    EXPECT_EQ(c.layer_kinds, std::vector<LayerKind>(4, LayerKind::gqa));
    EXPECT_EQ(c.gqa_layer_count(), 4);
    EXPECT_EQ(c.kv_heads, 2);
    EXPECT_EQ(c.head_dim, 32);
    EXPECT_FALSE(c.rope_interleave);  // NEOX pairs
    EXPECT_FALSE(c.renormalize);      // norm_topk_prob's default in HF's Qwen3MoeConfig
    EXPECT_EQ(moe_layers(c), (std::vector<int>{0, 1, 2, 3}));
    EXPECT_TRUE(format::parse_model_config(qwen3({{"norm_topk_prob", true}})).renormalize);
    // head_dim defaults to hidden / heads, num_key_value_heads to the heads
    json plain = qwen3();
    plain.erase("head_dim");
    plain.erase("num_key_value_heads");
    const ModelConfig p = format::parse_model_config(plain);
    EXPECT_EQ(p.head_dim, 16);
    EXPECT_EQ(p.kv_heads, 4);
}

TEST(FamilyConfig, Qwen3DenseLayersFollowSparseStepAndMlpOnlyLayers) {
    const ModelConfig step = format::parse_model_config(qwen3({{"decoder_sparse_step", 2}}));
    EXPECT_EQ(moe_layers(step), (std::vector<int>{1, 3}));
    EXPECT_EQ(step.moe_ordinal(3), 1);
    EXPECT_EQ(step.moe_ordinal(2), -1);
    EXPECT_EQ(step.dense_layer_count(), 2);
    const ModelConfig only = format::parse_model_config(qwen3({{"mlp_only_layers", {0, 2}}}));
    EXPECT_EQ(moe_layers(only), (std::vector<int>{1, 3}));
    const ModelConfig none = format::parse_model_config(qwen3({{"num_experts", 0}, {"num_experts_per_tok", 0}}));
    EXPECT_FALSE(none.has_moe());
    EXPECT_EQ(refusal(qwen3({{"mlp_only_layers", {4}}})).first, WASTE_ERR_FORMAT);
    // a dense layer needs intermediate_size
    json no_inter = qwen3({{"mlp_only_layers", {1}}});
    no_inter.erase("intermediate_size");
    EXPECT_NE(refusal(no_inter).second.find("intermediate_size"), std::string::npos);
}

TEST(FamilyConfig, KimiAndDeepSeekDenseLayersAreTheFirstK) {
    const json kimi = {{"model_type", "kimi_linear"}, {"hidden_size", 64}, {"num_hidden_layers", 3},
                       {"first_k_dense_replace", 1}, {"intermediate_size", 96}, {"moe_intermediate_size", 32},
                       {"num_experts", 8}, {"num_experts_per_token", 2}, {"vocab_size", 100},
                       {"num_attention_heads", 2}, {"kv_lora_rank", 16}, {"qk_nope_head_dim", 8},
                       {"v_head_dim", 8}};
    const ModelConfig c = format::parse_model_config(kimi);
    EXPECT_EQ(c.router, RouterKind::sigmoid_grouped);
    EXPECT_TRUE(c.renormalize);
    EXPECT_EQ(moe_layers(c), (std::vector<int>{1, 2}));
    EXPECT_EQ(c.moe_ordinal(1), 0);
    EXPECT_EQ(c.gqa_layer_count(), 0);
}

TEST(FamilyConfig, Qwen3RefusesWhatTheEngineDoesNotRunByName) {
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

TEST(FamilyConfig, RopeParametersOfNewerTransformersAreRead) {
    // newer transformers save rope_parameters instead of rope_theta / rope_scaling,
    // and num_local_experts for num_experts
    json newer = qwen3({{"rope_parameters", {{"rope_type", "default"}, {"rope_theta", 5e5}}}});
    newer.erase("rope_theta");
    newer.erase("rope_scaling");
    newer["num_local_experts"] = newer["num_experts"];
    newer.erase("num_experts");
    const ModelConfig c = format::parse_model_config(newer);
    EXPECT_EQ(c.rope_theta, 5e5);
    EXPECT_EQ(c.experts, 8);
    EXPECT_TRUE(c.has_moe());
    // rope_theta itself wins when both are there
    EXPECT_EQ(format::parse_model_config(qwen3({{"rope_parameters", {{"rope_type", "default"}, {"rope_theta", 5e5}}}}))
                  .rope_theta,
              1e6);
    json yarn = newer;
    yarn["rope_parameters"] = {{"rope_type", "yarn"}, {"rope_theta", 5e5}, {"factor", 4.0},
                               {"original_max_position_embeddings", 32768}};
    const auto [status, message] = refusal(yarn);
    EXPECT_EQ(status, WASTE_ERR_UNSUPPORTED);
    EXPECT_NE(message.find("rope_parameters"), std::string::npos) << message;
    json linear = newer;
    linear["rope_parameters"] = {{"rope_type", "linear"}, {"rope_theta", 5e5}, {"factor", 4.0}};
    EXPECT_EQ(refusal(linear).first, WASTE_ERR_UNSUPPORTED);
}

// GLM-4.5-Air's keys at a tiny size.
json glm4(json overrides = json::object()) {
    json c = {{"model_type", "glm4_moe"}, {"hidden_size", 64}, {"num_hidden_layers", 3},
              {"num_attention_heads", 4}, {"num_key_value_heads", 2}, {"head_dim", 32},
              {"partial_rotary_factor", 0.5}, {"attention_bias", true}, {"use_qk_norm", false},
              {"intermediate_size", 96}, {"moe_intermediate_size", 32}, {"n_routed_experts", 8},
              {"n_shared_experts", 1}, {"num_experts_per_tok", 2}, {"first_k_dense_replace", 1},
              {"n_group", 1}, {"topk_group", 1}, {"norm_topk_prob", true}, {"routed_scaling_factor", 1.0},
              {"rope_theta", 1e6}, {"rms_norm_eps", 1e-5}, {"vocab_size", 100}, {"rope_scaling", nullptr},
              {"num_nextn_predict_layers", 1}};
    c.update(overrides);
    return c;
}

TEST(FamilyConfig, Glm4IsGqaWithPartialRopeBiasesAndTheSigmoidRouter) {
    const ModelConfig c = format::parse_model_config(glm4());
    EXPECT_EQ(c.family, Family::glm4);
    EXPECT_EQ(c.router, RouterKind::sigmoid_grouped);
    EXPECT_EQ(c.layer_kinds, std::vector<LayerKind>(3, LayerKind::gqa));
    EXPECT_EQ(c.rope_dim, 16);  // int(32 * 0.5)
    EXPECT_TRUE(c.qkv_bias);
    EXPECT_FALSE(c.qk_norm);
    EXPECT_FALSE(c.rope_interleave);
    EXPECT_EQ(moe_layers(c), (std::vector<int>{1, 2}));
    EXPECT_EQ(c.shared_experts, 1);
    EXPECT_TRUE(format::parse_model_config(glm4({{"use_qk_norm", true}})).qk_norm);
    // HF Glm4MoeConfig's defaults: half the head rotated, layer 0 dense, one shared expert, no biases
    json bare = glm4();
    for (const char* key : {"partial_rotary_factor", "first_k_dense_replace", "n_shared_experts", "attention_bias"})
        bare.erase(key);
    const ModelConfig d = format::parse_model_config(bare);
    EXPECT_EQ(d.rope_dim, 16);
    EXPECT_EQ(moe_layers(d), (std::vector<int>{1, 2}));
    EXPECT_EQ(d.shared_experts, 1);
    EXPECT_FALSE(d.qkv_bias);
    // newer transformers keep the factor in rope_parameters
    json newer = glm4({{"rope_parameters", {{"rope_type", "default"}, {"rope_theta", 1e6}, {"partial_rotary_factor", 0.25}}}});
    newer.erase("partial_rotary_factor");
    EXPECT_EQ(format::parse_model_config(newer).rope_dim, 8);
    // rotated dims must be an even number >= 2
    const auto [status, message] = refusal(glm4({{"partial_rotary_factor", 0.03}}));
    EXPECT_EQ(status, WASTE_ERR_FORMAT);
    EXPECT_NE(message.find("partial_rotary_factor"), std::string::npos) << message;
    EXPECT_EQ(refusal(glm4({{"use_sliding_window", true}})).first, WASTE_ERR_UNSUPPORTED);
}

TEST(Rope, PartialRotationLeavesTheTailOfEachHead) {
    // 4 rotated dims of an 8-dim head (GLM's partial_rotary_factor 0.5): dims 4..7 pass
    const model::Rope halves(4, 1.0, false, nullptr);
    float x[16];
    for (int i = 0; i < 16; ++i) x[i] = static_cast<float>(i + 1);
    halves.apply(x, 2, 8, 3);
    const float c = std::cos(3.0f), s = std::sin(3.0f);
    for (int h = 0; h < 2; ++h) {
        const float* v = x + 8 * h;
        const float a0 = 8.0f * h + 1, a1 = 8.0f * h + 2, b0 = 8.0f * h + 3, b1 = 8.0f * h + 4;
        EXPECT_NEAR(v[0], a0 * c - b0 * s, 1e-5);
        EXPECT_NEAR(v[2], b0 * c + a0 * s, 1e-5);
        EXPECT_NEAR(v[1], a1 * std::cos(3.0) - b1 * std::sin(3.0), 1e-5);  // pair 1's frequency is 1 too (base 1)
        for (int i = 4; i < 8; ++i) EXPECT_EQ(v[i], 8.0f * h + i + 1) << h << " " << i;
    }
}

// gpt-oss-20b's keys at a tiny size.
json gpt_oss(json overrides = json::object()) {
    json c = {{"model_type", "gpt_oss"}, {"hidden_size", 64}, {"num_hidden_layers", 4},
              {"num_attention_heads", 4}, {"num_key_value_heads", 2}, {"head_dim", 16},
              {"intermediate_size", 32}, {"num_local_experts", 8}, {"num_experts_per_tok", 2},
              {"experts_per_token", 2}, {"sliding_window", 8}, {"attention_bias", true},
              {"layer_types", {"sliding_attention", "full_attention", "sliding_attention", "full_attention"}},
              {"rope_theta", 150000.0}, {"rms_norm_eps", 1e-5}, {"vocab_size", 100}, {"swiglu_limit", 7.0},
              {"hidden_act", "silu"},
              {"rope_scaling", {{"rope_type", "yarn"}, {"factor", 32.0}, {"original_max_position_embeddings", 4096},
                                {"beta_fast", 32.0}, {"beta_slow", 1.0}, {"truncate", false}}}};
    c.update(overrides);
    return c;
}

TEST(FamilyConfig, GptOssIsSlidingGqaWithSinksAndItsOwnRouterAndActivation) {
    const ModelConfig c = format::parse_model_config(gpt_oss());
    EXPECT_EQ(c.family, Family::gpt_oss);
    EXPECT_EQ(c.router, RouterKind::topk_softmax);
    EXPECT_EQ(c.activation, format::Activation::clamped_swiglu);
    EXPECT_EQ(c.layer_kinds, std::vector<LayerKind>(4, LayerKind::gqa));
    EXPECT_EQ(moe_layers(c), (std::vector<int>{0, 1, 2, 3}));
    EXPECT_EQ(c.moe_intermediate, 32);  // intermediate_size is the expert width
    EXPECT_TRUE(c.qkv_bias && c.o_bias && c.sinks && c.expert_bias);
    EXPECT_FALSE(c.qk_norm);
    EXPECT_EQ(c.rope_dim, 16);
    EXPECT_TRUE(c.yarn_enabled);
    EXPECT_FALSE(c.yarn.truncate);
    EXPECT_TRUE(c.is_sliding(0) && !c.is_sliding(1) && c.is_sliding(2) && !c.is_sliding(3));
    // YaRN without mscale keys: cos and sin times 1 + 0.1 ln 32
    const model::Rope rope(c.rope_dim, c.rope_theta, false, &c.yarn);
    EXPECT_NEAR(rope.attention_factor(), 1.0 + 0.1 * std::log(32.0), 1e-12);
    // HF's default layer_types: even layers sliding
    json bare = gpt_oss();
    bare.erase("layer_types");
    const ModelConfig d = format::parse_model_config(bare);
    EXPECT_TRUE(d.is_sliding(0) && !d.is_sliding(1) && d.is_sliding(2) && !d.is_sliding(3));
    const auto [status, message] = refusal(gpt_oss({{"layer_types", {"sliding_attention", "chunked_attention",
                                                                      "sliding_attention", "full_attention"}}}));
    EXPECT_EQ(status, WASTE_ERR_UNSUPPORTED);
    EXPECT_NE(message.find("layer_types[1]"), std::string::npos) << message;
    EXPECT_EQ(refusal(gpt_oss({{"n_shared_experts", 1}})).first, WASTE_ERR_UNSUPPORTED);
}

TEST(Routers, TopkThenSoftmaxOverTheChosen) {
    // gpt-oss (HF GptOssTopKRouter): the bias is part of the logits; top-k on them; softmax over the k
    ModelConfig c = format::parse_model_config(gpt_oss({{"num_experts_per_tok", 3}}));
    std::vector<float> logits = {0.5f, 2.0f, -1.0f, 2.0f, 0.0f, 1.5f, -3.0f, 0.25f};
    const std::vector<float> bias = {0.0f, -0.25f, 0.0f, 0.0f, 1.75f, 0.0f, 0.0f, 0.0f};
    std::vector<float> scratch(8), weights(3);
    std::vector<int> chosen;
    model::route_token(c, bias.data(), logits.data(), scratch.data(), &chosen, weights.data());
    EXPECT_EQ(chosen, (std::vector<int>{3, 1, 4}));  // 2.0; then 1 (2 - 0.25) and 4 (0 + 1.75) tie: the lower id first
    const double e0 = 1.0, e1 = std::exp(-0.25), sum = e0 + 2 * e1;
    EXPECT_NEAR(weights[0], e0 / sum, 1e-7);
    EXPECT_NEAR(weights[1], e1 / sum, 1e-7);
    EXPECT_NEAR(weights[2], e1 / sum, 1e-7);
    std::vector<float> scores = {0.5f, 2.0f, -1.0f, 2.0f, 0.0f, 1.5f, -3.0f, 0.25f};
    model::selection_scores(c, bias.data(), scores.data());  // lookahead ranks by logits + bias
    EXPECT_EQ(scores[4], 1.75f);
    EXPECT_EQ(scores[1], 1.75f);
}

TEST(Elementwise, ClampedSwigluOfGptOss) {
    const kernels::GluActivation act{false, 4.0f, 25.0f, 7.0f};
    const float g[] = {-2.0f, 0.5f, 6.9f, 7.5f, 30.0f, 3.0f};
    const float u[] = {1.0f, -8.0f, 9.0f, -0.5f, 2.0f, -30.0f};
    std::vector<float> out(g, g + 6);
    kernels::glu(kernels::active_isa(), act, out.data(), u, 6);
    for (int i = 0; i < 6; ++i) {
        const double gate = std::min<double>(g[i], 7.0), up = std::clamp<double>(u[i], -7.0, 7.0);
        const double want = (up + 1.0) * gate / (1.0 + std::exp(-1.702 * gate));
        EXPECT_NEAR(out[i], want, 1e-5 * std::max(1.0, std::abs(want))) << i;
    }
}

// bos/eos/pad_token_id as the releases write them (issue 37): one id, a
// list (GLM-4.5's config.json: three EOS ids), null or absent.
TEST(FamilyConfig, SpecialIdsAreAnIdAListOrNone) {
    // GLM-4.5-Air's own keys (ids scaled into the tiny vocab of 100)
    const ModelConfig glm = format::parse_model_config(qwen3({{"eos_token_id", {93, 96, 98}}, {"pad_token_id", 93}}));
    EXPECT_EQ(glm.eos, 93);
    EXPECT_EQ(glm.eos_ids, (std::vector<int32_t>{93, 96, 98}));
    EXPECT_EQ(glm.bos, -1);
    EXPECT_TRUE(glm.is_eos(96));
    EXPECT_FALSE(glm.is_eos(97));
    // Qwen3's: one each
    const ModelConfig qwen = format::parse_model_config(qwen3({{"bos_token_id", 97}, {"eos_token_id", 99}}));
    EXPECT_EQ(qwen.bos, 97);
    EXPECT_EQ(qwen.eos_ids, (std::vector<int32_t>{99}));
    // null, absent, -1: none; a list's repeats kept once; a bos list's first is the BOS
    for (const json& none : {json(nullptr), json(-1), json::array()}) {
        const ModelConfig c = format::parse_model_config(qwen3({{"eos_token_id", none}, {"bos_token_id", none}}));
        EXPECT_EQ(c.eos, -1) << none.dump();
        EXPECT_TRUE(c.eos_ids.empty()) << none.dump();
        EXPECT_EQ(c.bos, -1) << none.dump();
    }
    EXPECT_TRUE(format::parse_model_config(qwen3()).eos_ids.empty());
    EXPECT_EQ(format::parse_model_config(qwen3({{"eos_token_id", {5, 6, 5}}})).eos_ids, (std::vector<int32_t>{5, 6}));
    EXPECT_EQ(format::parse_model_config(qwen3({{"bos_token_id", {7, 8}}})).bos, 7);
    // pad is read for its shape only: the engine never pads
    EXPECT_EQ(refusal(qwen3({{"pad_token_id", {0, 100000}}})).first, WASTE_OK);
    EXPECT_EQ(refusal(qwen3({{"pad_token_id", nullptr}})).first, WASTE_OK);
    // what no release writes is refused, naming the key (and the list item)
    const std::pair<json, const char*> bad[] = {
        {{{"eos_token_id", "2"}}, "config.eos_token_id: expected a token id or a list of ids, got \"2\""},
        {{{"eos_token_id", {1, "2"}}}, "config.eos_token_id[1]: expected a token id (an integer), got \"2\""},
        {{{"eos_token_id", {1, 100}}}, "config.eos_token_id[1]: 100 is out of range [0, 99]"},
        {{{"eos_token_id", 100}}, "config.eos_token_id: 100 is out of range [-1, 99]"},
        {{{"eos_token_id", {-1}}}, "config.eos_token_id[0]: -1 is out of range [0, 99]"},
        {{{"bos_token_id", json::array({json{{"id", 1}}})}}, "config.bos_token_id[0]: expected a token id"},
        {{{"pad_token_id", "x"}}, "config.pad_token_id: expected a token id or a list of ids"},
        {{{"eos_token_id", std::vector<int>(format::max_special_ids + 1, 1)}}, "config.eos_token_id: 257 ids (at most 256)"},
    };
    for (const auto& [patch, message] : bad) {
        SCOPED_TRACE(patch.dump());
        const auto [status, what] = refusal(qwen3(patch));
        EXPECT_EQ(status, WASTE_ERR_FORMAT);
        EXPECT_NE(what.find(message), std::string::npos) << what;
    }
    // generation_config.json's ids are added after the config's, each once
    ModelConfig c = format::parse_model_config(qwen3({{"eos_token_id", 99}}));
    const json generation = {{"bos_token_id", 97}, {"eos_token_id", {99, 97}}, {"pad_token_id", 97}, {"do_sample", true}};
    format::add_eos_ids(&c, format::parse_special_ids(generation, "generation_config.json", c.vocab).eos);
    EXPECT_EQ(c.eos_ids, (std::vector<int32_t>{99, 97}));
    EXPECT_EQ(c.eos, 99);
    ModelConfig bare = format::parse_model_config(qwen3());
    format::add_eos_ids(&bare, {42, 43});
    EXPECT_EQ(bare.eos, 42);
}

// The family table (format/families.h) is the one list of model_types: each
// name is there once, and the config reader and the converter's refusal
// both read it.
TEST(FamilyConfig, EveryModelTypeOfTheTableNamesItsFamilyOnce) {
    std::set<std::string> names;
    for (const format::FamilyTraits& f : format::families()) {
        EXPECT_EQ(&format::traits_of(f.family), &f);
        for (const format::ModelType& t : f.model_types) {
            EXPECT_TRUE(names.insert(std::string(t.name)).second) << t.name;
            EXPECT_EQ(format::family_of_model_type(t.name), &f) << t.name;
            EXPECT_NE(format::known_model_types().find(t.name), std::string::npos) << t.name;
        }
    }
    EXPECT_EQ(names.size(), 12u);  // kimi_linear, kimi_k3, deepseek_v3, kimi_k2, qwen3_moe, glm4_moe, gpt_oss, minimax_m2,
                                   // mistral4, qwen3_5_moe, qwen3_5_moe_text, qwen3_next
    EXPECT_EQ(format::family_of_model_type("qwen2_moe"), nullptr);
    EXPECT_EQ(format::family_of_model_type(""), nullptr);  // the reader's own rule reads "" as Kimi-Linear
}

// MiniMax-M2's config.json keys at a tiny size (families-2026.md §3.2).
json minimax(json overrides = json::object()) {
    json c = {{"model_type", "minimax_m2"}, {"hidden_size", 64}, {"num_hidden_layers", 3},
              {"intermediate_size", 32}, {"num_local_experts", 8}, {"num_experts_per_tok", 2},
              {"num_attention_heads", 4}, {"num_key_value_heads", 2}, {"head_dim", 16}, {"rotary_dim", 8},
              {"use_qk_norm", true}, {"scoring_func", "sigmoid"}, {"use_routing_bias", true},
              {"rope_theta", 5e6}, {"rms_norm_eps", 1e-6}, {"vocab_size", 100}};
    c.merge_patch(overrides);
    return c;
}

TEST(FamilyConfig, MiniMaxM2ReadsItsKeysAndRefusesWhatItIsNot) {
    const ModelConfig c = format::parse_model_config(minimax());
    EXPECT_EQ(c.family, Family::minimax_m2);
    EXPECT_EQ(c.moe_layer_count(), 3);               // every layer MoE
    EXPECT_EQ(c.moe_intermediate, 32);               // intermediate_size is the expert width
    EXPECT_EQ(c.router, RouterKind::sigmoid_grouped);
    EXPECT_TRUE(c.renormalize);
    EXPECT_EQ(c.routed_scaling, 1.0);
    EXPECT_EQ(c.shared_experts, 0);
    EXPECT_EQ((std::pair{c.heads, c.kv_heads}), (std::pair{4, 2}));
    EXPECT_EQ((std::pair{c.head_dim, c.rope_dim}), (std::pair{16, 8}));
    EXPECT_TRUE(c.qk_norm && c.qk_norm_whole);
    EXPECT_FALSE(c.rope_interleave);                 // NEOX pairs
    EXPECT_STREQ(format::moe_block_prefix(c.family), "block_sparse_moe.");
    // groups count only with use_grouped_topk, which the releases leave off
    EXPECT_EQ(format::parse_model_config(minimax({{"num_expert_group", 4}, {"topk_group", 2}})).expert_groups, 1);
    EXPECT_FALSE(format::parse_model_config(minimax({{"use_qk_norm", false}})).qk_norm);
    for (const auto& [patch, key] : std::vector<std::pair<json, std::string>>{
             {{{"use_grouped_topk", true}}, "use_grouped_topk"},
             {{{"attention_bias", true}}, "attention_bias"},
             {{{"attn_window_size", 128}}, "attn_window_size"},
             {{{"rotary_dim", 7}}, "rotary_dim"},
             {{{"rotary_dim", 32}}, "rotary_dim"},
             {{{"scoring_func", "softmax"}}, "scoring_func"},
             {{{"n_shared_experts", 1}}, "shared experts"}}) {
        SCOPED_TRACE(patch.dump());
        const auto [status, message] = refusal(minimax(patch));
        EXPECT_NE(status, WASTE_OK);
        EXPECT_NE(message.find(key), std::string::npos) << message;
    }
}

// Mistral Small 4's text_config at toy size (families-2026.md §6.2): HF v5's
// rope_parameters, the temperature's beta among them.
json mistral4(json overrides = json::object()) {
    json c = {{"model_type", "mistral4"}, {"hidden_size", 64}, {"num_hidden_layers", 3}, {"first_k_dense_replace", 0},
              {"num_attention_heads", 4}, {"q_lora_rank", 32}, {"kv_lora_rank", 16}, {"qk_nope_head_dim", 8},
              {"qk_rope_head_dim", 8}, {"v_head_dim", 16}, {"moe_intermediate_size", 32}, {"n_routed_experts", 8},
              {"num_experts_per_tok", 2}, {"routed_scaling_factor", 1.0}, {"norm_topk_prob", true},
              {"rms_norm_eps", 1e-6}, {"vocab_size", 100}, {"rope_interleave", true},
              {"rope_parameters", {{"rope_type", "yarn"}, {"rope_theta", 10000.0}, {"factor", 128.0},
                                   {"original_max_position_embeddings", 8192}, {"beta_fast", 32.0}, {"beta_slow", 1.0},
                                   {"mscale", 1.0}, {"mscale_all_dim", 1.0}, {"llama_4_scaling_beta", 0.1}}}};
    c.merge_patch(overrides);
    return c;
}

TEST(FamilyConfig, Mistral4ReadsItsRouterAndQueryTemperature) {
    const ModelConfig c = format::parse_model_config(mistral4());
    EXPECT_EQ(c.family, Family::mistral4);
    EXPECT_EQ(c.moe_layer_count(), 3);
    EXPECT_EQ(c.mla_layer_count(), 3);
    EXPECT_TRUE(c.mla_rope);
    EXPECT_EQ(c.router, RouterKind::softmax_topk);
    EXPECT_TRUE(c.renormalize);
    EXPECT_EQ(c.shared_experts, 1);  // HF Mistral4Config's default
    EXPECT_TRUE(c.yarn_enabled);
    EXPECT_EQ(c.yarn.factor, 128.0);
    EXPECT_EQ(c.attn_temperature_scale, 0.1);
    EXPECT_EQ(c.attn_temperature_length, 8192);
    // exactly 1 below the original context, then 1 + beta ln(1 + floor(p / L0)) in f32
    EXPECT_EQ(c.query_temperature(0), 1.0f);
    EXPECT_EQ(c.query_temperature(8191), 1.0f);
    EXPECT_EQ(c.query_temperature(8192), 1.0f + 0.1f * std::log1p(1.0f));
    EXPECT_EQ(c.query_temperature(3 * 8192 + 5), 1.0f + 0.1f * std::log1p(3.0f));
    // the engine's own keys (a GGUF's temperature_scale / _length) come first
    const ModelConfig own =
        format::parse_model_config(mistral4({{"attn_temperature_scale", 0.5}, {"attn_temperature_length", 4}}));
    EXPECT_EQ((std::pair{own.attn_temperature_scale, own.attn_temperature_length}), (std::pair{0.5, int64_t{4}}));
    // without beta, no temperature; the router has no correction bias
    json plain = mistral4();
    plain["rope_parameters"].erase("llama_4_scaling_beta");
    EXPECT_EQ(format::parse_model_config(plain).query_temperature(1 << 20), 1.0f);
    for (const format::TrunkTensorSpec& t : format::trunk_tensor_table(c, [](const std::string&) { return false; }))
        EXPECT_NE(t.role, format::TrunkRole::router_correction_bias) << t.name;
    for (const auto& [config, key] : std::vector<std::pair<json, std::string>>{
             {mistral4({{"n_group", 2}, {"topk_group", 1}}), "n_group"},
             {mistral4({{"scoring_func", "sigmoid"}}), "scoring_func"},
             {minimax({{"attn_temperature_scale", 0.1}, {"attn_temperature_length", 4}}), "attn_temperature_scale"}}) {
        SCOPED_TRACE(config.dump());
        const auto [status, message] = refusal(config);
        EXPECT_NE(status, WASTE_OK);
        EXPECT_NE(message.find(key), std::string::npos) << message;
    }
}


json qwen35(json overrides = json::object()) {
    json c = {{"model_type", "qwen3_5_moe_text"}, {"hidden_size", 64}, {"num_hidden_layers", 8},
              {"num_attention_heads", 4}, {"num_key_value_heads", 2}, {"head_dim", 32}, {"attn_output_gate", true},
              {"linear_num_key_heads", 2}, {"linear_num_value_heads", 4}, {"linear_key_head_dim", 16},
              {"linear_value_head_dim", 16}, {"linear_conv_kernel_dim", 4}, {"num_experts", 8},
              {"num_experts_per_tok", 2}, {"moe_intermediate_size", 32}, {"shared_expert_intermediate_size", 48},
              {"rope_parameters", {{"rope_type", "default"}, {"rope_theta", 1e7}, {"partial_rotary_factor", 0.25}}},
              {"rms_norm_eps", 1e-6}, {"vocab_size", 100}};
    c.merge_patch(overrides);
    return c;
}

TEST(FamilyConfig, Qwen35ReadsItsLayersAndRefusesWhatItIsNot) {
    const ModelConfig c = format::parse_model_config(qwen35());
    EXPECT_EQ(c.family, Family::qwen35);
    // full attention on every 4th layer (HF's default), Gated DeltaNet elsewhere
    std::vector<format::LayerKind> kinds(8, format::LayerKind::gdn);
    kinds[3] = kinds[7] = format::LayerKind::gqa;
    EXPECT_EQ(c.layer_kinds, kinds);
    EXPECT_EQ((std::tuple{c.kda_heads, c.kda_v_heads, c.kda_head_dim, c.conv_kernel}), (std::tuple{2, 4, 16, 4}));
    EXPECT_EQ(c.delta_state_floats(), 4u * 16 * 16);
    EXPECT_EQ(c.delta_conv_floats(), 3u * (2 * 32 + 64));
    EXPECT_EQ((std::pair{c.head_dim, c.rope_dim}), (std::pair{32, 8}));  // a quarter of each head rotated
    EXPECT_EQ(c.rope_theta, 1e7);
    EXPECT_TRUE(c.attn_output_gate && c.qk_norm && c.zero_centred_norms);
    EXPECT_EQ(c.moe_layer_count(), 8);
    EXPECT_EQ(c.router, RouterKind::softmax_topk);
    EXPECT_TRUE(c.renormalize);
    EXPECT_EQ((std::tuple{c.shared_experts, c.shared_width(), c.shared_expert_gate}), (std::tuple{1, 48, true}));
    // Qwen3-Next: the same family, its norm_topk_prob read (Qwen3.5's config class has none: always renormalised)
    const ModelConfig next = format::parse_model_config(qwen35({{"model_type", "qwen3_next"}, {"norm_topk_prob", false}}));
    EXPECT_EQ(next.family, Family::qwen35);
    EXPECT_FALSE(next.renormalize);
    EXPECT_TRUE(format::parse_model_config(qwen35({{"norm_topk_prob", false}})).renormalize);
    // layer_types, when given, decides; the trunk table names the GDN and gated tensors
    json types = json::array();
    for (int i = 0; i < 8; ++i) types.push_back(i == 0 ? "full_attention" : "linear_attention");
    EXPECT_EQ(format::parse_model_config(qwen35({{"layer_types", types}})).gqa_layer_count(), 1);
    bool gdn_conv = false, gated_q = false, centred = false;
    for (const format::TrunkTensorSpec& t : format::trunk_tensor_table(c, [](const std::string&) { return false; })) {
        gdn_conv |= t.name == "model.layers.0.linear_attn.conv1d.weight" && t.shape == std::vector<int64_t>{128, 1, 4};
        gated_q |= t.name == "model.layers.3.self_attn.q_proj.weight" && t.shape == std::vector<int64_t>{256, 64};
        centred |= t.name == "model.norm.weight" && t.values == format::TrunkValues::centred_norm;
        if (t.name.ends_with("linear_attn.norm.weight")) {
            EXPECT_EQ(t.values, format::TrunkValues::norm);  // plain
        }
    }
    EXPECT_TRUE(gdn_conv && gated_q && centred);
    for (const auto& [config, key] : std::vector<std::pair<json, std::string>>{
             {qwen35({{"linear_value_head_dim", 32}}), "linear_value_head_dim"},
             {qwen35({{"linear_num_value_heads", 3}}), "linear_num_value_heads"},
             {qwen35({{"layer_types", json::array({"sliding_attention"})}}), "layer_types"},
             {qwen35({{"layer_types", json::array({"mamba", "linear_attention", "linear_attention", "full_attention",
                                                   "linear_attention", "linear_attention", "linear_attention",
                                                   "full_attention"})}}),
              "layer_types[0]"},
             {qwen35({{"rope_parameters", {{"rope_type", "yarn"}, {"factor", 4.0},
                                           {"original_max_position_embeddings", 4096}}}}),
              "rope_parameters"},
             {qwen35({{"attention_bias", true}}), "attention_bias"},
             {qwen35({{"mlp_only_layers", json::array({0})}}), "mlp_only_layers"},
             {qwen35({{"model_type", "qwen3_next"}, {"decoder_sparse_step", 2}}), "decoder_sparse_step"},
             {qwen35({{"routed_scaling_factor", 2.5}}), "routed_scaling_factor"},
             {qwen35({{"linear_num_key_heads", nullptr}}), "linear_num_key_heads"},
             {qwen35({{"scoring_func", "sigmoid"}}), "scoring_func"}}) {
        SCOPED_TRACE(config.dump());
        const auto [status, message] = refusal(config);
        EXPECT_NE(status, WASTE_OK);
        EXPECT_NE(message.find(key), std::string::npos) << message;
    }
}

TEST(FamilyConfig, AnUnknownModelTypeIsRefusedNamingTheKnownOnes) {
    const auto [status, message] = refusal(qwen3({{"model_type", "qwen2_moe"}}));
    EXPECT_EQ(status, WASTE_ERR_UNSUPPORTED);
    EXPECT_NE(message.find("\"qwen2_moe\""), std::string::npos) << message;
    EXPECT_NE(message.find("qwen3_moe"), std::string::npos) << message;
}

}  // namespace
}  // namespace waste
