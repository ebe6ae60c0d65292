// synth.cpp — draws the values of a synthetic container and streams them
// through format::ContainerWriter.
//
// Owns the values: quantised trunk tensors are drawn directly as codes and
// group scales (no float tensor is ever materialised, so a 1.2-billion-value
// embedding costs one 8 MiB row block of memory and runs at memory speed);
// F32 tensors as floats; codebooks as f16 centroids; expert records as random
// index bytes with row scales that keep each expert's output O(1). Memory is
// bounded by one row block, one expert record and the writer's buffers,
// whatever the preset's size.
#include "synth/synth.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "format/container_writer.h"
#include "format/f16.h"
#include "platform/error.h"
#include "synth/synth_config.h"
#include "synth/synth_random.h"
#include "synth/synth_tensors.h"
#include "synth/synth_tokenizer.h"

namespace waste::synth {
namespace {

using format::TrunkFormat;

constexpr uint64_t row_block_bytes = uint64_t{8} << 20;  // encoded payload drawn per block of rows
// Code distributions (see encode_codes): Q3G values uniform over -3..3 with 0
// twice as likely (variance 3.5); Q4G over -7..7, 0 twice (variance 17.5);
// Q8G over -127..127, 0 twice (variance 5397.5).
constexpr float q3_code_variance = 3.5f;
constexpr float q4_code_variance = 17.5f;
constexpr float q8_code_variance = 5397.5f;
constexpr uint16_t subnormal_scale = 0x0032;  // 50 * 2^-24 ≈ 3e-6, below f16's smallest normal 6.1e-5
constexpr uint16_t largest_subnormal_scale = 0x03FF;  // 1023 * 2^-24 ≈ 6.1e-5
constexpr float expert_gate_gain = 1.0f;

// Reports progress; a false from the callback cancels.
class Progress {
public:
    Progress(const SynthOptions& options, uint64_t total) : callback_(options.progress), total_(total) {}
    void report(uint64_t done) const {
        if (callback_ && !callback_(done, total_))
            fail(WASTE_ERR_CANCELLED, "synth cancelled after {} of {} bytes", done, total_);
    }

private:
    std::function<bool(uint64_t, uint64_t)> callback_;
    uint64_t total_;
};

// Q3G rows (container-v0 §3: 3-bit fields LSB-first, one guard byte) drawn
// from the random bytes already in `payload`: each field f stands for f - 4,
// f = 0 (-4, no positive twin) becomes 4 (0), padding columns are 4, and the
// bits after the last field are zero, as the converter leaves them.
void encode_q3g_rows(const format::TrunkTensor& t, uint64_t rows, std::vector<uint8_t>& payload) {
    const uint64_t padded_cols = t.groups_per_row * t.group;
    std::vector<uint8_t> drawn(t.row_stride);  // one row's random bytes
    for (uint64_t r = 0; r < rows; ++r) {
        uint8_t* row = payload.data() + r * t.row_stride;
        std::memcpy(drawn.data(), row, t.row_stride);
        std::memset(row, 0, t.row_stride);
        for (uint64_t i = 0; i < padded_cols; ++i) {
            const uint64_t bit = 3 * i;
            const unsigned pair = drawn[bit / 8] | (static_cast<unsigned>(drawn[bit / 8 + 1]) << 8);
            unsigned field = (pair >> (bit % 8)) & 7u;
            if (field == 0 || i >= t.cols) field = 4;
            const unsigned placed = field << (bit % 8);
            row[bit / 8] |= static_cast<uint8_t>(placed & 0xFF);
            row[bit / 8 + 1] |= static_cast<uint8_t>(placed >> 8);
        }
    }
}

// Random codes for `rows` rows of a quantised tensor, padding columns set to
// the quantised zero. Q4G: each nibble n stands for n - 8, and n = 0 (-8,
// which has no positive twin) becomes 8 (0), so the values are symmetric;
// Q8G: int8 -128 becomes 0 likewise; Q3G: encode_q3g_rows. Written as
// selects, not branches, so that the loops vectorise: this runs over every
// byte of the embedding.
void encode_codes(const format::TrunkTensor& t, uint64_t rows, Random& random, std::vector<uint8_t>& payload) {
    payload.resize(rows * t.row_stride);
    random.fill(payload.data(), payload.size());
    uint8_t* bytes = payload.data();
    const size_t count = payload.size();
    if (t.fmt == TrunkFormat::q3g) {
        encode_q3g_rows(t, rows, payload);
        return;
    }
    if (t.fmt == TrunkFormat::q4g) {
        for (size_t i = 0; i < count; ++i) {
            const uint8_t lo = bytes[i] & 0x0F, hi = bytes[i] & 0xF0;
            bytes[i] = static_cast<uint8_t>((lo == 0 ? 0x08 : lo) | (hi == 0 ? 0x80 : hi));
        }
    } else {
        for (size_t i = 0; i < count; ++i) bytes[i] = bytes[i] == 0x80 ? 0 : bytes[i];
    }
    const uint64_t padded_cols = t.groups_per_row * t.group;
    if (padded_cols == t.cols) return;
    for (uint64_t r = 0; r < rows; ++r) {
        uint8_t* row = bytes + r * t.row_stride;
        for (uint64_t i = t.cols; i < padded_cols; ++i) {
            if (t.fmt == TrunkFormat::q8g) row[i] = 0;
            else row[i / 2] = static_cast<uint8_t>((row[i / 2] & (i & 1 ? 0x0F : 0xF0)) | (8u << ((i & 1) * 4)));
        }
    }
}

void write_quantized(format::ContainerWriter& writer, const TensorPlan& plan, uint64_t seed, const Progress& progress) {
    WASTE_CHECK(plan.fmt == TrunkFormat::q3g || plan.fmt == TrunkFormat::q4g || plan.fmt == TrunkFormat::q8g);
    const format::TrunkTensor& t = writer.begin_trunk_tensor(plan.name, plan.fmt, plan.shape);
    const float variance = plan.fmt == TrunkFormat::q8g   ? q8_code_variance
                           : plan.fmt == TrunkFormat::q4g ? q4_code_variance
                                                          : q3_code_variance;
    const float base_scale = plan.std / std::sqrt(variance);
    Random random(stream_seed(seed, plan.name));
    const uint64_t rows_per_block = std::max<uint64_t>(1, row_block_bytes / t.row_stride);
    std::vector<uint8_t> payload;   // [rows][row_stride] codes
    std::vector<uint16_t> scales;   // [rows][groups_per_row] f16
    for (uint64_t row = 0; row < t.rows; row += rows_per_block) {
        const uint64_t rows = std::min(rows_per_block, t.rows - row);
        encode_codes(t, rows, random, payload);
        scales.resize(rows * t.groups_per_row);
        // Group scales vary (0.5x to 1.5x) so that a reader using the wrong group's scale is caught.
        for (uint16_t& scale : scales) scale = format::f32_to_f16(base_scale * (0.5f + random.uniform()));
        if (row == 0 && plan.subnormal_first_scale) scales[0] = subnormal_scale;
        if (row == 0 && plan.subnormal_first_row)
            std::fill_n(scales.begin(), t.groups_per_row, largest_subnormal_scale);
        writer.add_trunk_encoded_rows(payload, scales);
        progress.report(writer.bytes_written());
    }
    writer.end_trunk_tensor();
}

void write_f32(format::ContainerWriter& writer, const TensorPlan& plan, uint64_t seed) {
    uint64_t count = 1;
    for (int64_t dim : plan.shape) count *= static_cast<uint64_t>(dim);
    std::vector<float> values(count);
    Random random(stream_seed(seed, plan.name));
    for (uint64_t i = 0; i < count; ++i)
        values[i] = plan.live >= 0 && i >= static_cast<uint64_t>(plan.live) ? plan.pad_value
                                                                             : plan.mean + plan.std * random.normal();
    writer.add_trunk_tensor(plan.name, TrunkFormat::f32, plan.shape, values);
}

// The 3*stages codebooks of one MoE layer; returns the base record. Stage s
// has variance 4^-s / Σ_t 4^-t (residual VQ: each stage refines the last;
// the sum of stages has unit variance).
uint32_t write_codebooks(format::ContainerWriter& writer, const format::ExpertQuant& quant, int layer, uint64_t seed) {
    const uint32_t base = writer.codebook_count();
    float total = 0.0f;
    for (int s = 0; s < quant.stages; ++s) total += std::ldexp(1.0f, -2 * s);
    std::vector<uint16_t> centroids(static_cast<size_t>(quant.entries) * quant.vec_dim);  // [entries][vec_dim] f16
    for (int kind = 0; kind < 3; ++kind) {
        for (int s = 0; s < quant.stages; ++s) {
            const float std = std::sqrt(std::ldexp(1.0f, -2 * s) / total);
            Random random(stream_seed(seed, "codebook", static_cast<uint64_t>(layer), static_cast<uint64_t>(kind * quant.stages + s)));
            for (uint16_t& value : centroids) value = format::f32_to_f16(std * random.normal());
            writer.add_codebook(centroids);
        }
    }
    return base;
}

// Zeroes the index bytes of the padding rows (M..nb*64-1) of one matrix.
void zero_padding_rows(uint8_t* indices, const format::VqMatrixShape& shape, const format::ExpertQuant& quant) {
    const uint32_t tail = shape.rows % 64;
    if (tail == 0) return;
    const uint64_t positions = shape.cols / static_cast<uint32_t>(quant.vec_dim);
    const uint64_t per = static_cast<uint64_t>(quant.index_bytes_per_position());
    const uint64_t last_block = shape.rows / 64;
    for (uint64_t v = 0; v < positions; ++v)
        std::memset(indices + ((last_block * positions + v) * 64 + tail) * per, 0, (64 - tail) * per);
}

void write_bank(format::ContainerWriter& writer, const ResolvedPreset& preset, int layer, uint64_t seed,
                const Progress& progress) {
    const format::ModelConfig& c = preset.model;
    const format::ExpertLayout& layout = writer.expert_layout();
    const uint32_t base = write_codebooks(writer, preset.quant, layer, seed);
    writer.begin_bank(layer, base);
    // Row scales: W = scale[r] * Σ_s C_s has variance scale², so scale =
    // gain/sqrt(fan_in) gives N(0, gain²/fan_in) rows. The down projection of
    // a non-latent expert writes into the residual stream (residual_gain).
    const float gate_scale = expert_gate_gain / std::sqrt(static_cast<float>(layout.gate.cols));
    const float down_scale =
        (c.latent > 0 ? 1.0f : residual_gain(c)) / std::sqrt(static_cast<float>(layout.down.cols));
    const uint32_t gate_up_rows = layout.gate.rows + layout.up.rows;
    std::vector<uint16_t> scales(layout.scale_count);  // f16: M_gate, M_up, M_down
    for (int e = 0; e < c.experts; ++e) {
        Random random(stream_seed(seed, "expert", static_cast<uint64_t>(layer), static_cast<uint64_t>(e)));
        // Drawn straight into the output buffer. Uniform bytes are uniform
        // indices: 256 entries at 8 bits, or four uniform 6-bit fields per 3
        // bytes for VQ4P's 64 entries.
        uint8_t* record = writer.begin_expert(e).data();
        const std::pair<uint32_t, const format::VqMatrixShape*> matrices[] = {
            {layout.gate_off, &layout.gate}, {layout.up_off, &layout.up}, {layout.down_off, &layout.down}};
        for (const auto& [offset, shape] : matrices) {
            random.fill(record + offset, shape->index_bytes);
            zero_padding_rows(record + offset, *shape, preset.quant);
        }
        for (uint32_t r = 0; r < layout.scale_count; ++r)
            scales[r] = format::f32_to_f16((r < gate_up_rows ? gate_scale : down_scale) * (0.75f + 0.5f * random.uniform()));
        if (e == 0) scales[0] = subnormal_scale;
        std::memcpy(record + layout.scales_off, scales.data(), scales.size() * 2);
        writer.end_expert();
        progress.report(writer.bytes_written());
    }
    writer.end_bank();
}

struct Plan {
    ResolvedPreset preset;
    std::vector<TensorPlan> trunk;
    std::optional<SyntheticTokenizer> tokenizer;
    uint64_t total_bytes = 0;
};

Plan make_plan(const SynthOptions& options) {
    Plan plan;
    plan.preset = resolve_preset(options);
    plan.trunk = plan_trunk(plan.preset);
    const format::ModelConfig& c = plan.preset.model;
    if (plan.preset.tokenizer)
        plan.tokenizer = build_tokenizer(c.vocab - plan.preset.reserved_tokens, plan.preset.special_slots);
    uint64_t total = 0;
    for (const TensorPlan& t : plan.trunk) total += format::trunk_tensor_bytes(t.fmt, t.shape);
    const uint64_t moe_layers = static_cast<uint64_t>(c.moe_layer_count());
    if (moe_layers > 0) {
        const format::ExpertLayout layout = format::expert_layout(c, plan.preset.quant);
        total += moe_layers * 3 * plan.preset.quant.stages * plan.preset.quant.codebook_record_bytes();
        total += moe_layers * static_cast<uint64_t>(c.experts) * layout.record_bytes;
    }
    if (plan.tokenizer)
        total += plan.tokenizer->rank_file.size() + plan.tokenizer->specials_json.size() + plan.tokenizer->chat_json.size();
    if (plan.preset.vision) total += plan.preset.vision->dump(2).size() + 1;
    if (plan.preset.generation_config) total += plan.preset.generation_config->dump(1).size() + 1;
    plan.total_bytes = total;
    return plan;
}

}  // namespace

uint64_t synthetic_container_bytes(const SynthOptions& options) { return make_plan(options).total_bytes; }

void write_synthetic_container(const std::string& out_dir, const SynthOptions& options) {
    const Plan plan = make_plan(options);
    const ResolvedPreset& preset = plan.preset;
    const Progress progress(options, plan.total_bytes);
    format::ContainerSpec spec;
    spec.arch = preset.arch;
    spec.tensor_prefix = preset.tensor_prefix;
    spec.config = preset.config;
    if (preset.model.has_moe()) spec.quant = preset.quant;
    format::ContainerWriter writer(out_dir, std::move(spec));

    progress.report(0);
    if (plan.tokenizer) {
        writer.add_file("tokenizer.model", plan.tokenizer->rank_file);
        writer.add_file("specials.json", plan.tokenizer->specials_json);
        writer.add_file("chat.json", plan.tokenizer->chat_json);
    }
    if (preset.vision) writer.add_file("vision.json", preset.vision->dump(2) + "\n");
    if (preset.generation_config) writer.add_file("generation_config.json", preset.generation_config->dump(1) + "\n");
    for (const TensorPlan& t : plan.trunk) {
        if (t.fmt == TrunkFormat::f32) write_f32(writer, t, options.seed);
        else write_quantized(writer, t, options.seed, progress);
        progress.report(writer.bytes_written());
    }
    for (int layer = 0; layer < preset.model.layers; ++layer)
        if (preset.model.is_moe_layer(layer)) write_bank(writer, preset, layer, options.seed, progress);
    WASTE_CHECK(writer.bytes_written() == plan.total_bytes);
    writer.finish();
    if (options.progress) options.progress(plan.total_bytes, plan.total_bytes);  // committed: too late to cancel
}

}  // namespace waste::synth
