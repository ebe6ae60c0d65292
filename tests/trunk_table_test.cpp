// The one trunk tensor table (format/trunk_tensors.h) that the loader, the
// converter, the synth and the GGUF source all read: its invariants for every
// preset's config, the alternatives it leaves to the tensors or the config,
// the GGUF names. That the loader refuses a tensor the table names missing or
// misshapen is hostile_test's (HostileTrunk); that the converter, synth and
// GGUF source reproduce their files through it, the convert, synth, GGUF and
// fixture tests'.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include <fmt/format.h>

#include "format/trunk_tensors.h"
#include "synth/synth_config.h"

using namespace waste;
using format::TrunkRole;
using format::TrunkTensorSpec;

namespace {

const char* const presets[] = {"tiny",     "tiny-k3",     "mid",          "tiny-deepseek",  "mid-deepseek",
                               "tiny-qwen3", "mid-qwen3", "tiny-glm",     "mid-glm",        "tiny-gpt-oss",
                               "mid-gpt-oss", "qwen3-30b-a3b", "gpt-oss-20b", "glm-4.5-air", "deepseek-v3",
                               "kimi-linear-48b", "k3", "tiny-minimax", "mid-minimax", "minimax-m2"};

format::ModelConfig config_of(const std::string& preset) {
    synth::SynthOptions options;
    options.preset = preset;
    return synth::resolve_preset(options).model;
}

std::vector<TrunkTensorSpec> table_of(const format::ModelConfig& c, bool full_rank_gate) {
    return format::trunk_tensor_table(c, [&](const std::string& name) { return full_rank_gate && name.ends_with("g_proj.weight"); });
}

}  // namespace

// The loader indexes by (layer, role) and the converter by name: both must be
// unique, and a layer's tensors must carry its prefix.
TEST(TrunkTable, NamesAndRolesAreUniqueAndLayersOwnTheirTensors) {
    for (const char* preset : presets)
        for (bool full_rank : {false, true}) {
            SCOPED_TRACE(fmt::format("{} (full-rank KDA gate: {})", preset, full_rank));
            const format::ModelConfig c = config_of(preset);
            std::set<std::string> names;
            std::set<std::pair<int, TrunkRole>> roles;
            for (const TrunkTensorSpec& spec : table_of(c, full_rank)) {
                EXPECT_TRUE(names.insert(spec.name).second) << spec.name << " twice";
                EXPECT_TRUE(roles.insert({spec.layer, spec.role}).second) << spec.name << ": its role twice in a layer";
                const std::string layer_prefix = fmt::format("model.layers.{}.", spec.layer);
                if (spec.layer >= 0) {
                    EXPECT_TRUE(spec.name.starts_with(layer_prefix)) << spec.name;
                } else {
                    EXPECT_FALSE(spec.name.starts_with("model.layers.")) << spec.name;
                }
                EXPECT_LT(spec.layer, c.layers);
                for (int64_t d : spec.shape) EXPECT_GT(d, 0) << spec.name;
            }
            // every layer has its two norms; embed, final norm and lm_head are there once
            for (int layer = 0; layer < c.layers; ++layer) {
                EXPECT_TRUE(roles.count({layer, TrunkRole::input_norm}));
                EXPECT_TRUE(roles.count({layer, TrunkRole::post_norm}));
            }
            for (TrunkRole r : {TrunkRole::embed, TrunkRole::final_norm, TrunkRole::lm_head})
                EXPECT_TRUE(roles.count({-1, r}));
        }
}

// KDA's output gate is the one alternative the tensors settle: full-rank
// g_proj when present, else the low-rank pair; the MLA gate follows the
// config, q-LoRA follows q_lora_rank; a tied lm_head is optional.
TEST(TrunkTable, AlternativesFollowTheTensorsOrTheConfig) {
    const format::ModelConfig tiny = config_of("tiny");
    std::map<TrunkRole, int> low, full;
    for (const TrunkTensorSpec& s : table_of(tiny, false)) ++low[s.role];
    for (const TrunkTensorSpec& s : table_of(tiny, true)) ++full[s.role];
    const int kda_layers = tiny.kda_layer_count();
    ASSERT_GT(kda_layers, 0);
    EXPECT_EQ(low[TrunkRole::kda_g_a], kda_layers);
    EXPECT_EQ(low[TrunkRole::kda_g_b], kda_layers);
    EXPECT_EQ(low[TrunkRole::kda_g], 0);
    EXPECT_EQ(full[TrunkRole::kda_g], kda_layers);
    EXPECT_EQ(full[TrunkRole::kda_g_a], 0);

    const format::ModelConfig k3 = config_of("tiny-k3");
    ASSERT_TRUE(k3.mla_output_gate);
    ASSERT_GT(k3.q_lora, 0);
    for (const TrunkTensorSpec& s : table_of(k3, true)) {
        if (s.role == TrunkRole::mla_g) {
            EXPECT_FALSE(s.optional) << "the config turns the gate on: required";
        }
        EXPECT_NE(s.role, TrunkRole::mla_q) << "q_lora_rank is set: q_a/q_b, not q_proj";
    }
    format::ModelConfig plain = config_of("tiny-deepseek");
    plain.q_lora = 0;
    plain.tie_embeddings = true;
    int q = 0, q_a = 0;
    for (const TrunkTensorSpec& s : table_of(plain, false)) {
        q += s.role == TrunkRole::mla_q;
        q_a += s.role == TrunkRole::mla_q_a;
        if (s.role == TrunkRole::mla_g) {
            EXPECT_TRUE(s.optional);
        }
        if (s.role == TrunkRole::lm_head) {
            EXPECT_TRUE(s.optional) << "tied: lm_head only when a release stores it";
        }
        if (s.role == TrunkRole::kda_a_log) ADD_FAILURE() << "no KDA layer in DeepSeek";
    }
    EXPECT_EQ(q, plain.mla_layer_count());
    EXPECT_EQ(q_a, 0);
}

// Each family read from GGUF has a GGUF name for every tensor it requires,
// and no two tensors of a layer share one.
TEST(TrunkTable, GgufFamiliesNameEveryRequiredTensor) {
    // MiniMax-M2's q/k norms span the whole projections; its correction bias sits beside gate
    for (const TrunkTensorSpec& spec : table_of(config_of("tiny-minimax"), false)) {
        if (spec.role == TrunkRole::gqa_q_norm) {
            EXPECT_EQ(spec.shape, std::vector<int64_t>{4 * 32}) << spec.name;
        } else if (spec.role == TrunkRole::gqa_k_norm) {
            EXPECT_EQ(spec.shape, std::vector<int64_t>{2 * 32}) << spec.name;
        } else if (spec.role == TrunkRole::router_correction_bias) {
            EXPECT_TRUE(spec.name.ends_with("block_sparse_moe.e_score_correction_bias")) << spec.name;
        }
    }
    for (const char* preset : {"tiny-qwen3", "tiny-deepseek", "tiny-gpt-oss", "deepseek-v3", "tiny-minimax"}) {
        SCOPED_TRACE(preset);
        const format::ModelConfig c = config_of(preset);
        std::set<std::string> gguf_names;
        for (const TrunkTensorSpec& spec : table_of(c, false)) {
            const std::string_view base = format::gguf_tensor_name(spec.role, c.family);
            if (base.empty()) {
                EXPECT_TRUE(spec.optional) << spec.name << " is required but has no GGUF name";
                continue;
            }
            const std::string full = (spec.layer >= 0 ? fmt::format("blk.{}.", spec.layer) : std::string()) + std::string(base);
            EXPECT_TRUE(gguf_names.insert(full).second) << full << " named twice";
        }
    }
    // the one place the families differ: gpt-oss's second norm
    EXPECT_EQ(format::gguf_tensor_name(TrunkRole::post_norm, format::Family::gpt_oss), "post_attention_norm.weight");
    EXPECT_EQ(format::gguf_tensor_name(TrunkRole::post_norm, format::Family::qwen3), "ffn_norm.weight");
}
