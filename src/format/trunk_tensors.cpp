#include "format/trunk_tensors.h"

#include <fmt/format.h>

#include "format/families.h"

namespace waste::format {
namespace {

using R = TrunkRole;
using V = TrunkValues;
using Shape = std::vector<int64_t>;

struct Table {
    std::vector<TrunkTensorSpec> out;
    int layer = -1;
    std::string prefix;  // "model.layers.N." plus the block's own

    TrunkTensorSpec& add(R role, const std::string& name, Shape shape, V values) {
        out.push_back({role, layer, prefix + name, std::move(shape), values});
        return out.back();
    }
    void optional(R role, const std::string& name, Shape shape, V values) { add(role, name, std::move(shape), values).optional = true; }
};

void kda_tensors(Table& t, const ModelConfig& c, const TrunkTensorPresent& present) {
    const int64_t H = c.hidden, nh = c.kda_heads, D = c.kda_head_dim, C = nh * D;
    t.add(R::kda_q, "q_proj.weight", {C, H}, V::projection);
    t.add(R::kda_k, "k_proj.weight", {C, H}, V::projection);
    t.add(R::kda_v, "v_proj.weight", {C, H}, V::projection);
    t.add(R::kda_b, "b_proj.weight", {nh, H}, V::projection);
    t.add(R::kda_f_a, "f_a_proj.weight", {D, H}, V::projection);
    t.add(R::kda_f_b, "f_b_proj.weight", {C, D}, V::decay_projection);
    if (present(t.prefix + "g_proj.weight")) {
        t.add(R::kda_g, "g_proj.weight", {C, H}, V::projection);
    } else {
        t.add(R::kda_g_a, "g_a_proj.weight", {D, H}, V::projection);
        t.add(R::kda_g_b, "g_b_proj.weight", {C, D}, V::projection);
    }
    t.add(R::kda_o, "o_proj.weight", {H, C}, V::residual_out);
    t.add(R::kda_conv_q, "q_conv1d.weight", {C, 1, c.conv_kernel}, V::conv);
    t.add(R::kda_conv_k, "k_conv1d.weight", {C, 1, c.conv_kernel}, V::conv);
    t.add(R::kda_conv_v, "v_conv1d.weight", {C, 1, c.conv_kernel}, V::conv);
    t.add(R::kda_a_log, "A_log", {nh}, V::a_log).at_least = true;
    t.add(R::kda_dt_bias, "dt_bias", {C}, V::dt_bias);
    t.add(R::kda_o_norm, "o_norm.weight", {D}, V::norm);
}

// Gated DeltaNet (families-2026.md §1.5, HF Qwen3_5MoeGatedDeltaNet): q, k
// and v from one projection [q (Kd) | k (Kd) | v (Vd)] and one depthwise
// conv over those channels; z, b and a per value head; the output norm's
// plain weight.
void gdn_tensors(Table& t, const ModelConfig& c) {
    const int64_t H = c.hidden, D = c.kda_head_dim, Kd = c.kda_heads * D, hv = c.kda_v_heads, Vd = hv * D;
    t.add(R::gdn_qkv, "in_proj_qkv.weight", {2 * Kd + Vd, H}, V::projection);
    t.add(R::gdn_z, "in_proj_z.weight", {Vd, H}, V::projection);
    t.add(R::gdn_b, "in_proj_b.weight", {hv, H}, V::projection);
    t.add(R::gdn_a, "in_proj_a.weight", {hv, H}, V::projection);
    t.add(R::gdn_conv, "conv1d.weight", {2 * Kd + Vd, 1, c.conv_kernel}, V::conv);
    t.add(R::gdn_dt_bias, "dt_bias", {hv}, V::dt_bias);
    t.add(R::gdn_a_log, "A_log", {hv}, V::a_log);
    t.add(R::gdn_norm, "norm.weight", {D}, V::norm);
    t.add(R::gdn_out, "out_proj.weight", {H, Vd}, V::residual_out);
}

void mla_tensors(Table& t, const ModelConfig& c) {
    const int64_t H = c.hidden, nh = c.heads, q_head = c.qk_nope + c.qk_rope;
    if (c.q_lora > 0) {
        t.add(R::mla_q_a, "q_a_proj.weight", {c.q_lora, H}, V::projection);
        t.add(R::mla_q_a_norm, "q_a_layernorm.weight", {c.q_lora}, V::norm);
        t.add(R::mla_q_b, "q_b_proj.weight", {nh * q_head, c.q_lora}, V::projection);
    } else {
        t.add(R::mla_q, "q_proj.weight", {nh * q_head, H}, V::projection);
    }
    t.add(R::mla_kv_a, "kv_a_proj_with_mqa.weight", {c.kv_lora + c.qk_rope, H}, V::projection);
    t.add(R::mla_kv_a_norm, "kv_a_layernorm.weight", {c.kv_lora}, V::norm);
    t.add(R::mla_kv_b, "kv_b_proj.weight", {nh * (c.qk_nope + c.v_head), c.kv_lora}, V::projection);
    // The output gate: required when the config turns it on; a container
    // holding it otherwise is gated too (container-v0 §3, as upstream reads it).
    TrunkTensorSpec& gate = t.add(R::mla_g, "g_proj.weight", {nh * c.v_head, H}, V::projection);
    gate.optional = !c.mla_output_gate;
    t.add(R::mla_o, "o_proj.weight", {H, nh * c.v_head}, V::residual_out);
}

V norm_values(const ModelConfig& c) { return c.zero_centred_norms ? V::centred_norm : V::norm; }

// GQA (other-families.md §4, §7): Qwen3's per-head q/k norms; GLM-4.5's
// q/k/v biases (attention_bias) and q/k norms only with use_qk_norm;
// gpt-oss's o_proj bias and sinks; Qwen3.5's output gate (q_proj gives each
// head [q | gate]).
void gqa_tensors(Table& t, const ModelConfig& c) {
    const int64_t H = c.hidden, d = c.head_dim, q_width = static_cast<int64_t>(c.heads) * d,
                  kv_width = static_cast<int64_t>(c.kv_heads) * d;
    t.add(R::gqa_q, "q_proj.weight", {c.attn_output_gate ? 2 * q_width : q_width, H}, V::projection);
    t.add(R::gqa_k, "k_proj.weight", {kv_width, H}, V::projection);
    t.add(R::gqa_v, "v_proj.weight", {kv_width, H}, V::projection);
    t.add(R::gqa_o, "o_proj.weight", {H, q_width}, V::residual_out);
    if (c.qkv_bias) {
        t.add(R::gqa_q_bias, "q_proj.bias", {q_width}, V::bias);
        t.add(R::gqa_k_bias, "k_proj.bias", {kv_width}, V::bias);
        t.add(R::gqa_v_bias, "v_proj.bias", {kv_width}, V::bias);
    }
    if (c.qk_norm) {  // per head, or over the whole projection (MiniMax-M2)
        t.add(R::gqa_q_norm, "q_norm.weight", {c.qk_norm_whole ? q_width : d}, norm_values(c));
        t.add(R::gqa_k_norm, "k_norm.weight", {c.qk_norm_whole ? kv_width : d}, norm_values(c));
    }
    if (c.o_bias) t.add(R::gqa_o_bias, "o_proj.bias", {H}, V::residual_bias);
    if (c.sinks) t.add(R::gqa_sinks, "sinks", {c.heads}, V::sink);
}

void ffn_tensors(Table& t, int64_t hidden, int64_t intermediate, R gate, R up, R down) {
    t.add(gate, "gate_proj.weight", {intermediate, hidden}, V::projection);
    t.add(up, "up_proj.weight", {intermediate, hidden}, V::projection);
    t.add(down, "down_proj.weight", {hidden, intermediate}, V::residual_out);
}

// The MoE block's trunk part. gpt-oss: router.{weight, bias} and the experts'
// biases ([E, 2I] gate and up interleaved as the release stores them, [E, H]).
void moe_tensors(Table& t, const ModelConfig& c) {
    const int64_t H = c.hidden, E = c.experts;
    if (c.family == Family::gpt_oss) {
        t.add(R::router, "router.weight", {E, H}, V::router);
        t.add(R::router_bias, "router.bias", {E}, V::bias);
        t.add(R::experts_gate_up_bias, "experts.gate_up_proj_bias", {E, 2ll * c.moe_intermediate}, V::bias);
        t.add(R::experts_down_bias, "experts.down_proj_bias", {E, H}, V::residual_bias);
        return;
    }
    t.add(R::router, "gate.weight", {E, H}, V::router);
    // the sigmoid routers' selection bias; Qwen3's softmax router has none
    if (c.router == RouterKind::sigmoid_grouped)
        t.optional(R::router_correction_bias, std::string(traits_of(c.family).correction_bias), {E}, V::correction_bias);
    if (c.shared_experts > 0) {
        const std::string block = t.prefix;
        t.prefix += std::string(traits_of(c.family).shared_block);
        ffn_tensors(t, H, c.shared_width(), R::shared_gate, R::shared_up, R::shared_down);
        t.prefix = block;
        if (c.shared_expert_gate) t.add(R::shared_expert_gate, "shared_expert_gate.weight", {1, H}, V::router);
    }
    if (c.latent > 0) {
        t.add(R::latent_down, "routed_expert_down_proj.weight", {c.latent, H}, V::projection);
        t.add(R::latent_up, "routed_expert_up_proj.weight", {H, c.latent}, V::residual_out);
        t.optional(R::latent_norm, "routed_expert_norm.weight", {c.latent}, V::norm);
    }
}

}  // namespace

std::vector<TrunkTensorSpec> trunk_tensor_table(const ModelConfig& c, const TrunkTensorPresent& present) {
    const int64_t H = c.hidden;
    Table t;
    t.add(R::embed, "model.embed_tokens.weight", {c.vocab, H}, V::embedding);
    for (int layer = 0; layer < c.layers; ++layer) {
        const std::string lx = fmt::format("model.layers.{}.", layer);
        t.layer = layer;
        t.prefix = lx;
        t.add(R::input_norm, "input_layernorm.weight", {H}, norm_values(c));
        t.add(R::post_norm, "post_attention_layernorm.weight", {H}, norm_values(c));
        t.prefix = lx + "self_attn.";
        switch (c.layer_kinds[static_cast<size_t>(layer)]) {
            case LayerKind::kda: kda_tensors(t, c, present); break;
            case LayerKind::mla: mla_tensors(t, c); break;
            case LayerKind::gqa: gqa_tensors(t, c); break;
            case LayerKind::gdn: t.prefix = lx + "linear_attn."; gdn_tensors(t, c); break;
        }
        if (!c.is_moe_layer(layer)) {
            t.prefix = lx + "mlp.";
            ffn_tensors(t, H, c.intermediate, R::ffn_gate, R::ffn_up, R::ffn_down);
        } else {
            t.prefix = lx + moe_block_prefix(c.family);
            moe_tensors(t, c);
        }
        if (c.attn_res_block > 0) {
            t.prefix = lx;
            t.add(R::attn_res_norm, "self_attention_res_norm.weight", {H}, V::res_norm);
            t.add(R::attn_res_proj, "self_attention_res_proj.weight", {H}, V::res_proj);
            t.add(R::mlp_res_norm, "mlp_res_norm.weight", {H}, V::res_norm);
            t.add(R::mlp_res_proj, "mlp_res_proj.weight", {H}, V::res_proj);
        }
    }
    t.layer = -1;
    t.prefix.clear();
    if (c.attn_res_block > 0) {
        t.add(R::output_res_norm, "model.output_attn_res_norm.weight", {H}, V::res_norm);
        t.add(R::output_res_proj, "model.output_attn_res_proj.weight", {H}, V::res_proj);
    }
    t.add(R::final_norm, "model.norm.weight", {H}, norm_values(c));
    // Tied embeddings: lm_head is embed_tokens unless the release stores it anyway.
    TrunkTensorSpec& head = t.add(R::lm_head, "lm_head.weight", {c.vocab, H}, V::lm_head);
    head.optional = c.tie_embeddings;
    return std::move(t.out);
}

std::string_view gguf_tensor_name(TrunkRole role, Family family) {
    switch (role) {
        case R::embed: return "token_embd.weight";
        case R::final_norm: return "output_norm.weight";
        case R::lm_head: return "output.weight";
        case R::input_norm: return "attn_norm.weight";
        // gpt-oss's is llama.cpp's ATTN_POST_NORM, the others' FFN_NORM: one place in the layer
        case R::post_norm:
            return family == Family::gpt_oss || family == Family::qwen35 ? "post_attention_norm.weight" : "ffn_norm.weight";
        case R::mla_q_a: return "attn_q_a.weight";
        case R::mla_q_a_norm: return "attn_q_a_norm.weight";
        case R::mla_q_b: return "attn_q_b.weight";
        case R::mla_q: case R::gqa_q: return "attn_q.weight";
        case R::mla_kv_a: return "attn_kv_a_mqa.weight";
        case R::mla_kv_a_norm: return "attn_kv_a_norm.weight";
        case R::mla_kv_b: return "attn_kv_b.weight";
        case R::mla_o: case R::gqa_o: return "attn_output.weight";
        case R::gqa_k: return "attn_k.weight";
        case R::gqa_v: return "attn_v.weight";
        case R::gqa_q_bias: return "attn_q.bias";
        case R::gqa_k_bias: return "attn_k.bias";
        case R::gqa_v_bias: return "attn_v.bias";
        case R::gqa_o_bias: return "attn_output.bias";
        case R::gqa_q_norm: return "attn_q_norm.weight";
        case R::gqa_k_norm: return "attn_k_norm.weight";
        case R::gqa_sinks: return "attn_sinks.weight";
        case R::ffn_gate: return "ffn_gate.weight";
        case R::ffn_up: return "ffn_up.weight";
        case R::ffn_down: return "ffn_down.weight";
        case R::router: return "ffn_gate_inp.weight";
        case R::router_bias: return "ffn_gate_inp.bias";
        case R::router_correction_bias: return "exp_probs_b.bias";
        case R::shared_gate: return "ffn_gate_shexp.weight";
        case R::shared_up: return "ffn_up_shexp.weight";
        case R::shared_down: return "ffn_down_shexp.weight";
        case R::experts_gate_up_bias: return "ffn_gate_exps.bias";  // with ffn_up_exps.bias
        case R::experts_down_bias: return "ffn_down_exps.bias";
        // not read from GGUF yet: Kimi-Linear's KDA, K3's latent MoE and Attention Residuals
        case R::kda_q: case R::kda_k: case R::kda_v: case R::kda_b: case R::kda_f_a: case R::kda_f_b: case R::kda_g:
        case R::kda_g_a: case R::kda_g_b: case R::kda_o: case R::kda_conv_q: case R::kda_conv_k: case R::kda_conv_v:
        case R::kda_a_log: case R::kda_dt_bias: case R::kda_o_norm: case R::mla_g: case R::latent_down:
        case R::latent_up: case R::latent_norm: case R::attn_res_norm: case R::attn_res_proj: case R::mlp_res_norm:
        case R::mlp_res_proj: case R::output_res_norm: case R::output_res_proj: case R::count_: break;
        // qwen35moe (its values rearranged as convert/gguf_source.cpp's untile_qwen35 says)
        case R::gdn_qkv: return "attn_qkv.weight";
        case R::gdn_z: return "attn_gate.weight";
        case R::gdn_b: return "ssm_beta.weight";
        case R::gdn_a: return "ssm_alpha.weight";
        case R::gdn_conv: return "ssm_conv1d.weight";
        case R::gdn_a_log: return "ssm_a";
        case R::gdn_dt_bias: return "ssm_dt.bias";
        case R::gdn_norm: return "ssm_norm.weight";
        case R::gdn_out: return "ssm_out.weight";
        case R::shared_expert_gate: return "ffn_gate_inp_shexp.weight";
    }
    return {};
}

}  // namespace waste::format
