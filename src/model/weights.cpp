#include "model/weights.h"

#include <array>
#include <cmath>

#include "format/trunk_tensors.h"
#include "platform/error.h"

namespace waste::model {
namespace {

using format::Container;
using format::LoadedTensor;
using format::TrunkTensorSpec;
using R = format::TrunkRole;

// Binds tensors by role through the trunk table (format/trunk_tensors.h):
// each one is found under the table's name and checked against its shape.
struct Binder {
    const Container& container;
    const format::ModelConfig& c;
    // [layer + 1][role]: the table's entry, or null where the config has none
    std::vector<std::array<const TrunkTensorSpec*, format::trunk_role_count>> specs;
    std::vector<TrunkTensorSpec> table;

    Binder(const Container& container_, const format::ModelConfig& config) : container(container_), c(config) {
        table = format::trunk_tensor_table(c, [&](const std::string& name) { return container.tensor(name) != nullptr; });
        specs.assign(static_cast<size_t>(c.layers) + 1, {});
        for (const TrunkTensorSpec& spec : table) specs[static_cast<size_t>(spec.layer + 1)][static_cast<size_t>(spec.role)] = &spec;
    }

    std::string full(const std::string& name) const { return container.manifest().tensor_prefix + name; }

    // The tensor of `role` in `layer` (-1: outside the layers); null when the
    // table has none or an optional one is absent; a required one missing throws.
    std::pair<const TrunkTensorSpec*, const LoadedTensor*> find(int layer, R role) const {
        const TrunkTensorSpec* spec = specs[static_cast<size_t>(layer + 1)][static_cast<size_t>(role)];
        if (!spec) return {nullptr, nullptr};
        const LoadedTensor* t = spec->optional ? container.tensor(spec->name) : &container.require(spec->name);
        return {spec, t};
    }

    // A matrix, compared as [rows, cols].
    Matrix matrix(int layer, R role) const {
        const auto [spec, t] = find(layer, role);
        if (!t) return nullptr;
        const uint64_t rows = static_cast<uint64_t>(spec->shape[0]), cols = static_cast<uint64_t>(spec->shape[1]);
        if (t->info->rows != rows || t->info->cols != cols)
            fail_format("trunk tensor {}: shape [{}] is not the expected [{}, {}]", full(spec->name),
                        fmt::join(t->info->shape, ", "), rows, cols);
        return t;
    }
    // A vector (norms, biases, conv taps, ...) dequantised to f32, compared by
    // its number of values; empty when absent.
    std::vector<float> vector(int layer, R role) const {
        const auto [spec, t] = find(layer, role);
        if (!t) return {};
        const uint64_t want = static_cast<uint64_t>(spec->elements());
        if (spec->at_least ? t->info->elements() < want : t->info->elements() != want)
            fail_format("trunk tensor {}: {} elements, expected {}{}", full(spec->name), t->info->elements(),
                        spec->at_least ? "at least " : "", want);
        std::vector<float> values = t->dequantize();
        if (spec->values == format::TrunkValues::centred_norm)  // zero-centred: multiplied as 1 + w
            for (float& v : values) v += 1.0f;
        return values;
    }

    FfnWeights ffn(int layer, R gate, R up, R down, int intermediate) const {
        FfnWeights f;
        f.intermediate = intermediate;
        f.gate = matrix(layer, gate);
        f.up = matrix(layer, up);
        f.down = matrix(layer, down);
        return f;
    }

    KdaWeights kda(int L) const {
        KdaWeights w;
        w.q = matrix(L, R::kda_q);
        w.k = matrix(L, R::kda_k);
        w.v = matrix(L, R::kda_v);
        w.conv_q = vector(L, R::kda_conv_q);
        w.conv_k = vector(L, R::kda_conv_k);
        w.conv_v = vector(L, R::kda_conv_v);
        w.f_a = matrix(L, R::kda_f_a);
        w.f_b = matrix(L, R::kda_f_b);
        w.b = matrix(L, R::kda_b);
        const std::vector<float> a_log = vector(L, R::kda_a_log);  // one per head, maybe padded: the first heads
        for (int64_t i = 0; i < c.kda_heads; ++i) w.a.push_back(std::exp(a_log[static_cast<size_t>(i)]));
        w.dt_bias = vector(L, R::kda_dt_bias);
        w.g = matrix(L, R::kda_g);  // full-rank, or low-rank (the table holds the one present)
        w.g_a = matrix(L, R::kda_g_a);
        w.g_b = matrix(L, R::kda_g_b);
        w.o_norm = vector(L, R::kda_o_norm);
        w.o = matrix(L, R::kda_o);
        return w;
    }

    GdnWeights gdn(int L) const {
        GdnWeights w;
        w.qkv = matrix(L, R::gdn_qkv);
        w.conv = vector(L, R::gdn_conv);
        w.z = matrix(L, R::gdn_z);
        w.b = matrix(L, R::gdn_b);
        w.a = matrix(L, R::gdn_a);
        for (float a_log : vector(L, R::gdn_a_log)) w.a_rate.push_back(std::exp(a_log));
        w.dt_bias = vector(L, R::gdn_dt_bias);
        w.norm = vector(L, R::gdn_norm);
        w.out = matrix(L, R::gdn_out);
        return w;
    }

    MlaWeights mla(int L) const {
        MlaWeights w;
        const int64_t qk = c.qk_nope + c.qk_rope;
        w.q_a = matrix(L, R::mla_q_a);
        w.q_a_norm = vector(L, R::mla_q_a_norm);
        w.q_b = matrix(L, R::mla_q_b);
        w.q = matrix(L, R::mla_q);
        w.kv_a = matrix(L, R::mla_kv_a);
        w.kv_a_norm = vector(L, R::mla_kv_a_norm);
        w.kv_b = matrix(L, R::mla_kv_b);
        w.g = matrix(L, R::mla_g);
        w.o = matrix(L, R::mla_o);
        if (c.mla_rope && c.qk_rope > 0) {
            w.rope = Rope(c.qk_rope, c.rope_theta, c.rope_interleave, c.yarn_enabled ? &c.yarn : nullptr);
        }
        // (written as before YaRN existed, so Kimi's scale keeps its bits)
        w.score_scale = 1.0f / std::sqrt(static_cast<float>(qk));
        if (const double m2 = mla_softmax_scale_factor(c); m2 != 1.0)
            w.score_scale = static_cast<float>(m2 / std::sqrt(static_cast<double>(qk)));
        return w;
    }

    GqaWeights gqa(int L) const {
        GqaWeights w;
        w.q = matrix(L, R::gqa_q);
        w.output_gate = c.attn_output_gate;
        w.k = matrix(L, R::gqa_k);
        w.v = matrix(L, R::gqa_v);
        w.o = matrix(L, R::gqa_o);
        w.q_bias = vector(L, R::gqa_q_bias);
        w.k_bias = vector(L, R::gqa_k_bias);
        w.v_bias = vector(L, R::gqa_v_bias);
        w.q_norm = vector(L, R::gqa_q_norm);
        w.k_norm = vector(L, R::gqa_k_norm);
        w.o_bias = vector(L, R::gqa_o_bias);
        w.sinks = vector(L, R::gqa_sinks);
        if (c.is_sliding(L)) w.window = c.sliding_window;
        w.rope = Rope(c.rope_dim, c.rope_theta, c.rope_interleave, c.yarn_enabled ? &c.yarn : nullptr);
        w.score_scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.head_dim)));
        return w;
    }

    MoeWeights moe(int L) const {
        MoeWeights w;
        w.router = matrix(L, R::router);
        w.router_bias = vector(L, R::router_bias);  // gpt-oss's, added to the logits
        if (w.router_bias.empty()) w.router_bias = vector(L, R::router_correction_bias);  // selection only
        if (w.router_bias.empty()) w.router_bias.assign(c.experts, 0.0f);
        // gpt-oss's experts' biases, gate and up de-interleaved (gate = ::2, up = 1::2)
        if (const std::vector<float> gate_up = vector(L, R::experts_gate_up_bias); !gate_up.empty()) {
            const size_t experts = c.experts, inter = c.moe_intermediate;
            w.gate_bias.resize(experts * inter);
            w.up_bias.resize(experts * inter);
            for (size_t e = 0; e < experts; ++e)
                for (size_t i = 0; i < inter; ++i) {
                    w.gate_bias[e * inter + i] = gate_up[e * 2 * inter + 2 * i];
                    w.up_bias[e * inter + i] = gate_up[e * 2 * inter + 2 * i + 1];
                }
        }
        w.down_bias = vector(L, R::experts_down_bias);
        if (c.shared_experts > 0) {
            w.has_shared = true;
            w.shared = ffn(L, R::shared_gate, R::shared_up, R::shared_down, c.shared_width());
            w.shared_gate = vector(L, R::shared_expert_gate);
        }
        w.latent_down = matrix(L, R::latent_down);
        w.latent_up = matrix(L, R::latent_up);
        w.latent_norm = vector(L, R::latent_norm);
        return w;
    }
};

}  // namespace

ModelWeights bind_weights(const Container& container) {
    const format::ModelConfig& c = container.config();
    for (int layer = 0; layer < c.layers; ++layer)
        if (c.layer_kinds[static_cast<size_t>(layer)] == format::LayerKind::kda && c.kda_heads < 1)
            fail_format("layer {} is KDA but config.linear_attn_config is missing", layer);
    const Binder bind(container, c);
    ModelWeights w;
    w.embed = bind.matrix(-1, R::embed);
    w.lm_head = bind.matrix(-1, R::lm_head);
    if (!w.lm_head) w.lm_head = w.embed;  // tied
    w.final_norm = bind.vector(-1, R::final_norm);
    w.output_res_norm = bind.vector(-1, R::output_res_norm);
    w.output_res_proj = bind.vector(-1, R::output_res_proj);
    for (int layer = 0; layer < c.layers; ++layer) {
        LayerWeights lw;
        lw.kind = c.layer_kinds[static_cast<size_t>(layer)];
        lw.input_norm = bind.vector(layer, R::input_norm);
        lw.post_norm = bind.vector(layer, R::post_norm);
        switch (lw.kind) {
            case format::LayerKind::kda: lw.kda = bind.kda(layer); break;
            case format::LayerKind::mla: lw.mla = bind.mla(layer); break;
            case format::LayerKind::gqa: lw.gqa = bind.gqa(layer); break;
            case format::LayerKind::gdn: lw.gdn = bind.gdn(layer); break;
        }
        lw.moe = c.is_moe_layer(layer);
        if (lw.moe) lw.moe_weights = bind.moe(layer);
        else lw.dense = bind.ffn(layer, R::ffn_gate, R::ffn_up, R::ffn_down, c.intermediate);
        lw.attn_res.attn_norm = bind.vector(layer, R::attn_res_norm);
        lw.attn_res.attn_proj = bind.vector(layer, R::attn_res_proj);
        lw.attn_res.mlp_norm = bind.vector(layer, R::mlp_res_norm);
        lw.attn_res.mlp_proj = bind.vector(layer, R::mlp_res_proj);
        w.layers.push_back(std::move(lw));
    }
    return w;
}

}  // namespace waste::model
