#include "synth/synth_tensors.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "synth/synth_vision.h"

namespace waste::synth {
namespace {

using format::LayerKind;
using format::TrunkFormat;

// Router rows ~ N(0, router_variance / H): with unit-RMS input the logits have
// standard deviation 2, so sigmoid scores spread over (0.1, 0.9) and the
// top-k set changes from token to token.
constexpr float router_gain = 2.0f;
constexpr float correction_bias_std = 0.01f;  // small against that spread: it nudges, never decides
constexpr float lm_head_gain = 2.0f;          // logits of standard deviation ~2
constexpr float norm_std = 0.1f;              // norm weights 1 ± 0.1
constexpr float conv_std = 0.5f;              // 4 taps: output variance ~1
// KDA decay: z = f_b·f_a·x + dt_bias ≈ -2.5 ± 0.5, a = exp(A_log) ≈ 1:
// Kimi-Linear's e^{-a·softplus(z)} ≈ 0.92, K3's e^{-5·σ(a·z)} ≈ 0.68.
constexpr float dt_bias_mean = -2.5f;
constexpr float dt_bias_std = 0.5f;
constexpr float a_log_std = 0.3f;
constexpr float a_log_pad = 3.0f;             // e^3 = 20: a reader using the padding decays visibly too fast
constexpr float decay_projection_gain = 0.5f;
constexpr float attn_res_norm_std = 0.1f;
constexpr float bias_std = 0.1f;               // projection biases: small beside unit-scale outputs
constexpr float sink_std = 1.0f;               // a sink logit per head, as large as the scores     // AttnRes scores ~ N(0, 1): rmsnorm(v)·norm·proj with proj ~ N(0, 1/H)

bool ends_with(const std::string& text, const char* suffix) {
    const size_t n = std::char_traits<char>::length(suffix);
    return text.size() >= n && text.compare(text.size() - n, n, suffix) == 0;
}

struct Planner {
    std::vector<TensorPlan> out;
    std::string prefix;
    std::optional<TrunkFormat> quantised;  // replaces Q8G/Q4G for every quantised tensor

    TensorPlan& add(std::string name, std::vector<int64_t> shape, float mean, float std) {
        TensorPlan t;
        t.name = prefix + name;
        t.fmt = shape.size() != 2 ? TrunkFormat::f32
                : quantised       ? *quantised
                : ends_with(name, "embed_tokens.weight") || ends_with(name, "lm_head.weight") ? TrunkFormat::q8g
                                                                                              : TrunkFormat::q4g;
        t.shape = std::move(shape);
        t.mean = mean;
        t.std = std;
        out.push_back(std::move(t));
        return out.back();
    }
    // A linear weight [out, in] ~ N(0, (gain^2) / in).
    TensorPlan& linear(std::string name, int64_t rows, int64_t cols, float gain = 1.0f) {
        return add(std::move(name), {rows, cols}, 0.0f, gain / std::sqrt(static_cast<float>(cols)));
    }
    void norm(std::string name, int64_t size) { add(std::move(name), {size}, 1.0f, norm_std); }
};

}  // namespace

float residual_gain(const format::ModelConfig& model) {
    return 1.0f / std::sqrt(static_cast<float>(std::max(1, model.layers)));
}

std::vector<TensorPlan> plan_trunk(const ResolvedPreset& preset) {
    const format::ModelConfig& c = preset.model;
    const int64_t H = c.hidden;
    const float out_gain = residual_gain(c);
    Planner p;
    p.prefix = preset.tensor_prefix;
    p.quantised = preset.trunk_quant;

    p.add("model.embed_tokens.weight", {c.vocab, H}, 0.0f, 1.0f);
    for (int layer = 0; layer < c.layers; ++layer) {
        const std::string lx = fmt::format("model.layers.{}.", layer);
        p.norm(lx + "input_layernorm.weight", H);
        p.norm(lx + "post_attention_layernorm.weight", H);
        const std::string a = lx + "self_attn.";
        if (c.layer_kinds[layer] == LayerKind::kda) {
            const int64_t nh = c.kda_heads, D = c.kda_head_dim, C = nh * D;
            p.linear(a + "q_proj.weight", C, H);
            p.linear(a + "k_proj.weight", C, H);
            p.linear(a + "v_proj.weight", C, H);
            p.linear(a + "b_proj.weight", nh, H);
            p.linear(a + "f_a_proj.weight", D, H);
            p.linear(a + "f_b_proj.weight", C, D, decay_projection_gain);
            if (preset.kda_full_rank_gate) {
                p.linear(a + "g_proj.weight", C, H);
            } else {
                p.linear(a + "g_a_proj.weight", D, H);
                p.linear(a + "g_b_proj.weight", C, D);
            }
            p.linear(a + "o_proj.weight", H, C, out_gain);
            for (const char* conv : {"q_conv1d.weight", "k_conv1d.weight", "v_conv1d.weight"})
                p.add(a + conv, {C, 1, c.conv_kernel}, 0.0f, conv_std);
            // One value per head; K3-like presets pad it to head_dim.
            const int64_t stored = preset.k3_like ? std::max(nh, D) : nh;
            TensorPlan& a_log = p.add(a + "A_log", {1, 1, stored, 1}, 0.0f, a_log_std);
            a_log.live = nh;
            a_log.pad_value = a_log_pad;
            p.add(a + "dt_bias", {C}, dt_bias_mean, dt_bias_std);
            p.norm(a + "o_norm.weight", D);
        } else if (c.layer_kinds[layer] == LayerKind::gqa) {
            const int64_t q_width = static_cast<int64_t>(c.heads) * c.head_dim,
                          kv_width = static_cast<int64_t>(c.kv_heads) * c.head_dim;
            p.linear(a + "q_proj.weight", q_width, H);
            p.linear(a + "k_proj.weight", kv_width, H);
            p.linear(a + "v_proj.weight", kv_width, H);
            p.linear(a + "o_proj.weight", H, q_width, out_gain);
            if (c.qkv_bias) {
                p.add(a + "q_proj.bias", {q_width}, 0.0f, bias_std);
                p.add(a + "k_proj.bias", {kv_width}, 0.0f, bias_std);
                p.add(a + "v_proj.bias", {kv_width}, 0.0f, bias_std);
            }
            if (c.qk_norm) {
                p.norm(a + "q_norm.weight", c.head_dim);
                p.norm(a + "k_norm.weight", c.head_dim);
            }
            if (c.o_bias) p.add(a + "o_proj.bias", {H}, 0.0f, bias_std * out_gain);
            if (c.sinks) p.add(a + "sinks", {c.heads}, 0.0f, sink_std);
        } else {
            const int64_t nh = c.heads, q_head = c.qk_nope + c.qk_rope;
            if (c.q_lora > 0) {
                p.linear(a + "q_a_proj.weight", c.q_lora, H);
                p.norm(a + "q_a_layernorm.weight", c.q_lora);
                p.linear(a + "q_b_proj.weight", nh * q_head, c.q_lora).subnormal_first_scale = true;
            } else {
                p.linear(a + "q_proj.weight", nh * q_head, H).subnormal_first_scale = true;
            }
            p.linear(a + "kv_a_proj_with_mqa.weight", c.kv_lora + c.qk_rope, H);
            p.norm(a + "kv_a_layernorm.weight", c.kv_lora);
            p.linear(a + "kv_b_proj.weight", nh * (c.qk_nope + c.v_head), c.kv_lora).subnormal_first_scale = true;
            if (c.mla_output_gate) p.linear(a + "g_proj.weight", nh * c.v_head, H);
            p.linear(a + "o_proj.weight", H, nh * c.v_head, out_gain);
        }
        if (!c.is_moe_layer(layer)) {
            const std::string m = lx + "mlp.";
            p.linear(m + "gate_proj.weight", c.intermediate, H);
            p.linear(m + "up_proj.weight", c.intermediate, H);
            p.linear(m + "down_proj.weight", H, c.intermediate, out_gain);
        } else if (c.family == format::Family::gpt_oss) {
            // router.{weight,bias}; the experts' biases beside their VQ records
            // ([E, 2I] gate/up interleaved as the release stores them, [E, H])
            const std::string m = lx + "mlp.";
            p.linear(m + "router.weight", c.experts, H, router_gain);
            p.add(m + "router.bias", {c.experts}, 0.0f, bias_std);
            p.add(m + "experts.gate_up_proj_bias", {c.experts, 2ll * c.moe_intermediate}, 0.0f, bias_std).fmt =
                TrunkFormat::f32;
            p.add(m + "experts.down_proj_bias", {c.experts, H}, 0.0f, bias_std * out_gain).fmt = TrunkFormat::f32;
        } else {
            const std::string m = lx + format::moe_block_prefix(c.family);
            p.linear(m + "gate.weight", c.experts, H, router_gain);
            // the sigmoid routers' selection bias; Qwen3's softmax router has none
            if (c.router == format::RouterKind::sigmoid_grouped)
                p.add(m + "gate.e_score_correction_bias", {c.experts}, 0.0f, correction_bias_std);
            if (c.shared_experts > 0) {
                const int64_t shared = static_cast<int64_t>(c.moe_intermediate) * c.shared_experts;
                p.linear(m + "shared_experts.gate_proj.weight", shared, H);
                p.linear(m + "shared_experts.up_proj.weight", shared, H);
                p.linear(m + "shared_experts.down_proj.weight", H, shared, out_gain);
            }
            if (c.latent > 0) {
                p.linear(m + "routed_expert_down_proj.weight", c.latent, H);
                p.linear(m + "routed_expert_up_proj.weight", H, c.latent, out_gain);
                if (preset.latent_norm) p.norm(m + "routed_expert_norm.weight", c.latent);
            }
        }
        if (c.attn_res_block > 0) {
            for (const char* kind : {"self_attention_res", "mlp_res"}) {
                p.add(lx + kind + "_norm.weight", {H}, 1.0f, attn_res_norm_std);
                p.add(lx + kind + "_proj.weight", {H}, 0.0f, 1.0f / std::sqrt(static_cast<float>(H)));
            }
        }
    }
    if (c.attn_res_block > 0) {
        p.add("model.output_attn_res_norm.weight", {H}, 1.0f, attn_res_norm_std);
        p.add("model.output_attn_res_proj.weight", {H}, 0.0f, 1.0f / std::sqrt(static_cast<float>(H)));
    }
    p.norm("model.norm.weight", H);
    if (!c.tie_embeddings) p.linear("lm_head.weight", c.vocab, H, lm_head_gain);
    if (preset.vision) {
        plan_vision(*preset.vision, c, p.out);
    } else if (preset.k3_like && !preset.tensor_prefix.empty()) {
        // One vision-tower tensor outside the prefix: a text loader must skip it.
        p.prefix.clear();
        p.linear("vision_tower.patch_embed.proj.weight", 64, 3 * 14 * 14);
    }
    return std::move(p.out);
}

}  // namespace waste::synth
