#include "model/weights.h"

#include <cmath>

#include "platform/error.h"

namespace waste::model {
namespace {

using format::Container;
using format::LoadedTensor;

struct Binder {
    const Container& container;
    const format::ModelConfig& c;

    std::string full(const std::string& name) const { return container.manifest().tensor_prefix + name; }

    void check_shape(const LoadedTensor& t, std::initializer_list<int64_t> expected_rows_cols, const std::string& name) const {
        // Compare as [rows, cols]: a [C, 1, k] conv is rows C, cols k.
        auto it = expected_rows_cols.begin();
        const uint64_t rows = static_cast<uint64_t>(*it++), cols = static_cast<uint64_t>(*it);
        if (t.info->rows != rows || t.info->cols != cols)
            fail_format("trunk tensor {}: shape [{}] is not the expected [{}, {}]", full(name), fmt::join(t.info->shape, ", "),
                        rows, cols);
    }

    Matrix matrix(const std::string& name, int64_t rows, int64_t cols) const {
        const LoadedTensor& t = container.require(name);
        check_shape(t, {rows, cols}, name);
        return &t;
    }
    Matrix optional_matrix(const std::string& name, int64_t rows, int64_t cols) const {
        return container.tensor(name) ? matrix(name, rows, cols) : nullptr;
    }
    std::vector<float> vector(const std::string& name, int64_t size) const {
        const LoadedTensor& t = container.require(name);
        if (t.info->rows * t.info->cols != static_cast<uint64_t>(size))
            fail_format("trunk tensor {}: {} elements, expected {}", full(name), t.info->rows * t.info->cols, size);
        return t.dequantize();
    }
    std::vector<float> optional_vector(const std::string& name, int64_t size) const {
        return container.tensor(name) ? vector(name, size) : std::vector<float>{};
    }

    FfnWeights ffn(const std::string& prefix, int intermediate) const {
        FfnWeights f;
        f.intermediate = intermediate;
        f.gate = matrix(prefix + "gate_proj.weight", intermediate, c.hidden);
        f.up = matrix(prefix + "up_proj.weight", intermediate, c.hidden);
        f.down = matrix(prefix + "down_proj.weight", c.hidden, intermediate);
        return f;
    }

    KdaWeights kda(const std::string& p) const {
        KdaWeights w;
        const int64_t heads = c.kda_heads, d = c.kda_head_dim, channels = heads * d, h = c.hidden;
        w.q = matrix(p + "q_proj.weight", channels, h);
        w.k = matrix(p + "k_proj.weight", channels, h);
        w.v = matrix(p + "v_proj.weight", channels, h);
        w.conv_q = vector(p + "q_conv1d.weight", channels * c.conv_kernel);
        w.conv_k = vector(p + "k_conv1d.weight", channels * c.conv_kernel);
        w.conv_v = vector(p + "v_conv1d.weight", channels * c.conv_kernel);
        w.f_a = matrix(p + "f_a_proj.weight", d, h);
        w.f_b = matrix(p + "f_b_proj.weight", channels, d);
        w.b = matrix(p + "b_proj.weight", heads, h);
        const LoadedTensor& a_log = container.require(p + "A_log");
        if (a_log.info->elements() < static_cast<uint64_t>(heads))
            fail_format("trunk tensor {}: {} values, need one per head ({})", full(p + "A_log"), a_log.info->elements(), heads);
        std::vector<float> a_values = a_log.dequantize();
        for (int64_t i = 0; i < heads; ++i) w.a.push_back(std::exp(a_values[i]));
        w.dt_bias = vector(p + "dt_bias", channels);
        if (container.tensor(p + "g_proj.weight")) {
            w.g = matrix(p + "g_proj.weight", channels, h);
        } else {
            w.g_a = matrix(p + "g_a_proj.weight", d, h);
            w.g_b = matrix(p + "g_b_proj.weight", channels, d);
        }
        w.o_norm = vector(p + "o_norm.weight", d);
        w.o = matrix(p + "o_proj.weight", h, channels);
        return w;
    }

    MlaWeights mla(const std::string& p) const {
        MlaWeights w;
        const int64_t heads = c.heads, qk = c.qk_nope + c.qk_rope, h = c.hidden;
        if (container.tensor(p + "q_a_proj.weight")) {
            if (c.q_lora < 1) fail_format("trunk tensor {} exists but config.q_lora_rank is unset", full(p + "q_a_proj.weight"));
            w.q_a = matrix(p + "q_a_proj.weight", c.q_lora, h);
            w.q_a_norm = vector(p + "q_a_layernorm.weight", c.q_lora);
            w.q_b = matrix(p + "q_b_proj.weight", heads * qk, c.q_lora);
        } else {
            w.q = matrix(p + "q_proj.weight", heads * qk, h);
        }
        w.kv_a = matrix(p + "kv_a_proj_with_mqa.weight", c.kv_lora + c.qk_rope, h);
        w.kv_a_norm = vector(p + "kv_a_layernorm.weight", c.kv_lora);
        w.kv_b = matrix(p + "kv_b_proj.weight", heads * (c.qk_nope + c.v_head), c.kv_lora);
        w.g = optional_matrix(p + "g_proj.weight", heads * c.v_head, h);
        if (c.mla_output_gate && !w.g) fail_format("config.mla_use_output_gate is true but {} is missing", full(p + "g_proj.weight"));
        w.o = matrix(p + "o_proj.weight", h, heads * c.v_head);
        if (c.mla_rope && c.qk_rope > 0) {
            w.rope = Rope(c.qk_rope, c.rope_theta, c.rope_interleave, c.yarn_enabled ? &c.yarn : nullptr);
        }
        // (written as before YaRN existed, so Kimi's scale keeps its bits)
        w.score_scale = 1.0f / std::sqrt(static_cast<float>(qk));
        if (const double m2 = mla_softmax_scale_factor(c); m2 != 1.0)
            w.score_scale = static_cast<float>(m2 / std::sqrt(static_cast<double>(qk)));
        return w;
    }

    GqaWeights gqa(const std::string& p, int layer) const {
        GqaWeights w;
        const int64_t d = c.head_dim, q_width = static_cast<int64_t>(c.heads) * d, kv_width = static_cast<int64_t>(c.kv_heads) * d;
        w.q = matrix(p + "q_proj.weight", q_width, c.hidden);
        w.k = matrix(p + "k_proj.weight", kv_width, c.hidden);
        w.v = matrix(p + "v_proj.weight", kv_width, c.hidden);
        w.o = matrix(p + "o_proj.weight", c.hidden, q_width);
        if (c.qkv_bias) {
            w.q_bias = vector(p + "q_proj.bias", q_width);
            w.k_bias = vector(p + "k_proj.bias", kv_width);
            w.v_bias = vector(p + "v_proj.bias", kv_width);
        }
        if (c.qk_norm) {
            w.q_norm = vector(p + "q_norm.weight", d);
            w.k_norm = vector(p + "k_norm.weight", d);
        }
        if (c.o_bias) w.o_bias = vector(p + "o_proj.bias", c.hidden);
        if (c.sinks) w.sinks = vector(p + "sinks", c.heads);
        if (c.is_sliding(layer)) w.window = c.sliding_window;
        w.rope = Rope(c.rope_dim, c.rope_theta, c.rope_interleave, c.yarn_enabled ? &c.yarn : nullptr);
        w.score_scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));
        return w;
    }

    MoeWeights moe(const std::string& p) const {
        MoeWeights w;
        if (c.family == format::Family::gpt_oss) {
            // router.{weight, bias}; the experts' biases de-interleaved (gate = ::2, up = 1::2)
            const size_t experts = c.experts, inter = c.moe_intermediate;
            w.router = matrix(p + "router.weight", c.experts, c.hidden);
            w.router_bias = vector(p + "router.bias", c.experts);
            const std::vector<float> gate_up = vector(p + "experts.gate_up_proj_bias", c.experts * 2ll * c.moe_intermediate);
            w.gate_bias.resize(experts * inter);
            w.up_bias.resize(experts * inter);
            for (size_t e = 0; e < experts; ++e)
                for (size_t i = 0; i < inter; ++i) {
                    w.gate_bias[e * inter + i] = gate_up[e * 2 * inter + 2 * i];
                    w.up_bias[e * inter + i] = gate_up[e * 2 * inter + 2 * i + 1];
                }
            w.down_bias = vector(p + "experts.down_proj_bias", static_cast<int64_t>(c.experts) * c.hidden);
            return w;
        }
        w.router = matrix(p + "gate.weight", c.experts, c.hidden);
        w.router_bias = optional_vector(p + "gate.e_score_correction_bias", c.experts);
        if (w.router_bias.empty()) w.router_bias.assign(c.experts, 0.0f);
        if (c.shared_experts > 0) {
            w.has_shared = true;
            w.shared = ffn(p + "shared_experts.", c.moe_intermediate * c.shared_experts);
        }
        if (c.latent > 0) {
            w.latent_down = matrix(p + "routed_expert_down_proj.weight", c.latent, c.hidden);
            w.latent_up = matrix(p + "routed_expert_up_proj.weight", c.hidden, c.latent);
            w.latent_norm = optional_vector(p + "routed_expert_norm.weight", c.latent);
        }
        return w;
    }
};

}  // namespace

ModelWeights bind_weights(const Container& container) {
    const format::ModelConfig& c = container.config();
    Binder bind{container, c};
    ModelWeights w;
    w.embed = bind.matrix("model.embed_tokens.weight", c.vocab, c.hidden);
    w.lm_head = c.tie_embeddings && !container.tensor("lm_head.weight") ? w.embed
                                                                          : bind.matrix("lm_head.weight", c.vocab, c.hidden);
    w.final_norm = bind.vector("model.norm.weight", c.hidden);
    if (c.attn_res_block > 0) {
        w.output_res_norm = bind.vector("model.output_attn_res_norm.weight", c.hidden);
        w.output_res_proj = bind.vector("model.output_attn_res_proj.weight", c.hidden);
    }
    for (int layer = 0; layer < c.layers; ++layer) {
        const std::string p = fmt::format("model.layers.{}.", layer);
        LayerWeights lw;
        lw.kind = c.layer_kinds[layer];
        lw.input_norm = bind.vector(p + "input_layernorm.weight", c.hidden);
        lw.post_norm = bind.vector(p + "post_attention_layernorm.weight", c.hidden);
        if (lw.kind == format::LayerKind::kda) {
            if (c.kda_heads < 1) fail_format("layer {} is KDA but config.linear_attn_config is missing", layer);
            lw.kda = bind.kda(p + "self_attn.");
        } else if (lw.kind == format::LayerKind::gqa) {
            lw.gqa = bind.gqa(p + "self_attn.", layer);
        } else {
            lw.mla = bind.mla(p + "self_attn.");
        }
        lw.moe = c.is_moe_layer(layer);
        if (lw.moe) lw.moe_weights = bind.moe(p + format::moe_block_prefix(c.family));
        else lw.dense = bind.ffn(p + "mlp.", c.intermediate);
        if (c.attn_res_block > 0) {
            lw.attn_res.attn_norm = bind.vector(p + "self_attention_res_norm.weight", c.hidden);
            lw.attn_res.attn_proj = bind.vector(p + "self_attention_res_proj.weight", c.hidden);
            lw.attn_res.mlp_norm = bind.vector(p + "mlp_res_norm.weight", c.hidden);
            lw.attn_res.mlp_proj = bind.vector(p + "mlp_res_proj.weight", c.hidden);
        }
        w.layers.push_back(std::move(lw));
    }
    return w;
}

}  // namespace waste::model
