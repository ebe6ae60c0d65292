#include "model/model_summary.h"

#include <set>
#include <vector>

#include "format/families.h"

namespace waste::model {

ModelSummary summarize(const format::Container& container) {
    const format::ModelConfig& c = container.config();
    const format::Manifest& m = container.manifest();
    ModelSummary s;
    const bool k3_like = c.latent > 0 || c.attn_res_block > 0 || c.activation == format::Activation::situ ||
                         c.gate_lower_bound < 0;
    // the model_type's own name (format/families), Kimi's by its features
    for (const format::ModelType& type : format::traits_of(c.family).model_types)
        if (type.name == c.model_type) s.arch = type.summary;
    if (s.arch.empty()) s.arch = k3_like ? "kimi-k3" : "kimi-linear";
    const std::string embed = m.tensor_prefix + "model.embed_tokens.weight";
    uint64_t embed_params = 0;
    std::set<format::TrunkFormat> formats;
    for (const format::TrunkTensor& t : m.trunk) {
        if (!container.is_text_tensor(t)) continue;
        s.params_trunk += t.elements();
        formats.insert(t.fmt);
        if (t.name == embed) embed_params = t.elements();
    }
    s.params_per_expert = 3ull * c.moe_intermediate * c.expert_input();
    const uint64_t moe_layers = m.banks.size();
    s.params_total = s.params_trunk + moe_layers * c.experts * s.params_per_expert;
    s.params_active = s.params_trunk - embed_params + moe_layers * c.top_k * s.params_per_expert;
    std::vector<std::string> names;
    for (auto order : {format::TrunkFormat::q3g, format::TrunkFormat::q4g, format::TrunkFormat::q8g, format::TrunkFormat::f32})
        if (formats.count(order)) names.push_back(format::trunk_format_name(order));
    std::string trunk;
    for (size_t i = 0; i < names.size(); ++i) trunk += (i ? "/" : "") + names[i];
    s.quantization = (moe_layers ? "experts " + m.quant.fmt_name + ", " : std::string()) + "trunk " + trunk;
    return s;
}

TokenTraffic token_traffic(const format::Container& container) {
    const format::ModelConfig& c = container.config();
    const format::Manifest& m = container.manifest();
    TokenTraffic traffic;
    // every text trunk tensor once, but an untied embedding: one row of it
    // (its table was counted whole here before, 34 MB too many on mid)
    const std::string embed_name = m.tensor_prefix + "model.embed_tokens.weight";
    for (const format::TrunkTensor& t : m.trunk) {
        if (!container.is_text_tensor(t)) continue;
        if (t.name == embed_name && !c.tie_embeddings) {
            traffic.trunk_bytes += t.rows ? (t.payload_bytes + t.scale_bytes) / t.rows : 0;
            continue;
        }
        traffic.trunk_bytes += t.payload_bytes + t.scale_bytes;
        traffic.trunk_multiply_adds += t.elements();
    }
    if (!container.has_experts()) return traffic;
    const format::ExpertQuant& q = m.quant;
    const format::ExpertLayout& layout = container.expert_layout();
    const uint64_t layers = m.banks.size(), top_k = c.top_k, lat = c.expert_input(), inter = c.moe_intermediate;
    const uint64_t per_position = static_cast<uint64_t>(q.stages) * q.entries * 4;
    traffic.expert_bytes = layers * top_k * (layout.payload_end - format::expert_header_bytes);
    // gate and up tables (written once, read by every expert), one down table per expert
    traffic.lut_bytes = layers * (2 * (lat / q.vec_dim) * per_position + top_k * (inter / q.vec_dim) * per_position);
    traffic.lookups = layers * top_k * q.stages * (2 * inter * (lat / q.vec_dim) + lat * (inter / q.vec_dim));
    traffic.table_multiply_adds = layers * q.stages * q.entries * (2 * lat + top_k * inter);
    return traffic;
}

}  // namespace waste::model
