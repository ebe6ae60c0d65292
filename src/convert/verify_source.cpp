#include "convert/verify_source.h"


#include <cmath>
#include <cstring>
#include <filesystem>
#include <optional>

#include <fmt/format.h>

#include "convert/checkpoint.h"
#include "convert/checkpoint_source.h"
#include "convert/gguf_source.h"
#include "convert/kimi_layout.h"
#include "convert/vq_fit.h"
#include "format/container.h"
#include "format/gguf.h"
#include "format/trunk_codec.h"
#include "platform/aligned_buffer.h"
#include "platform/direct_file.h"
#include "platform/error.h"
#include "platform/utf8_path.h"

namespace waste::convert {
namespace {

using json = nlohmann::json;

constexpr uint64_t row_block_bytes = uint64_t{8} << 20;

double limit_for(format::TrunkFormat fmt) {
    switch (fmt) {
        case format::TrunkFormat::f32: return 1e-6;
        case format::TrunkFormat::q8g: return 0.02;
        case format::TrunkFormat::q4g: return 0.25;
        case format::TrunkFormat::q3g: return 0.5;
    }
    return 0;
}

std::vector<uint8_t> read_range(const std::string& path, uint64_t offset, uint64_t bytes) {
    std::vector<uint8_t> out(bytes);
    platform::DirectFile(path, false).read_at(offset, out);
    return out;
}

double rel(double e2, double w2) { return w2 > 0 ? std::sqrt(e2 / w2) : std::sqrt(e2); }

}  // namespace

json verify_against_source(const std::string& model_dir, const std::string& source_dir, const VerifyOptions& options) {
    format::ContainerOptions container_options;
    container_options.verify_checksums = true;
    container_options.want_direct_io = false;
    const std::unique_ptr<format::Container> container = format::Container::open(model_dir, container_options);
    const format::Manifest& manifest = container->manifest();
    std::optional<Checkpoint> checkpoint;
    std::unique_ptr<WeightSource> source;
    if (format::has_gguf_magic(source_dir)) {
        source = open_gguf_weights(source_dir);
    } else {
        checkpoint.emplace(Checkpoint::open(platform::utf8_path(source_dir)));
        source = checkpoint_source(*checkpoint);
    }
    const ConvertPlan plan = plan_kimi_conversion(manifest.config_json, *source);

    json report = {{"model", model_dir}, {"source", source_dir}, {"layers", json::array()}, {"trunk", json::array()},
                   {"failures", json::array()}};
    const double bits = manifest.has_quant ? manifest.quant.bits_per_weight : 3.0;
    const double expert_limit = options.max_expert_error > 0 ? options.max_expert_error : (bits >= 3 ? 0.35 : 0.5);
    report["expert_limit"] = expert_limit;

    uint64_t total = manifest.trunk.size(), done = 0;
    for (const auto& [layer, bank] : manifest.banks) total += bank.experts;
    auto advance = [&] {
        ++done;
        if (options.progress && !options.progress(done, total))
            fail(WASTE_ERR_CANCELLED, "verify cancelled after {} of {} items", done, total);
    };

    // Trunk tensors, one at a time, a block of rows at a time.
    const std::string trunk_path = platform::utf8_text(platform::utf8_path(model_dir) / "trunk.bin");
    std::vector<float> want, got;
    for (const format::TrunkTensor& t : manifest.trunk) {
        if (!source->has(t.name)) {
            if (!container->is_text_tensor(t)) {
                advance();
                continue;
            }
            report["failures"].push_back(fmt::format("trunk tensor {} is not in the source", t.name));
            advance();
            continue;
        }
        const std::vector<uint8_t> payload = read_range(trunk_path, t.offset, t.payload_bytes);
        const std::vector<uint8_t> scales = t.scale_bytes ? read_range(trunk_path, t.scale_offset, t.scale_bytes)
                                                          : std::vector<uint8_t>{};
        double e2 = 0, w2 = 0;
        const uint64_t rows_per_block = std::max<uint64_t>(1, row_block_bytes / (t.cols * 4));
        got.resize(t.cols);
        for (uint64_t row = 0; row < t.rows; row += rows_per_block) {
            const uint64_t rows = std::min(rows_per_block, t.rows - row);
            want.resize(rows * t.cols);
            read_stored_rows(*source, t.name, t.cols, row, rows, want);
            for (uint64_t r = 0; r < rows; ++r) {
                format::dequantize_row(t, payload, scales, row + r, got);
                for (uint64_t i = 0; i < t.cols; ++i) {
                    const double d = static_cast<double>(want[r * t.cols + i]) - got[i];
                    e2 += d * d;
                    w2 += static_cast<double>(want[r * t.cols + i]) * want[r * t.cols + i];
                }
            }
        }
        const double error = rel(e2, w2), limit = limit_for(t.fmt);
        report["trunk"].push_back({{"name", t.name}, {"fmt", format::trunk_format_name(t.fmt)}, {"error", error},
                                   {"limit", limit}});
        if (!(error <= limit))
            report["failures"].push_back(
                fmt::format("trunk tensor {} ({}): relative error {:.4g} above {}", t.name, format::trunk_format_name(t.fmt), error, limit));
        advance();
    }

    // Experts: every record read, checked (CRC included), decoded and compared.
    const format::ExpertLayout& layout = container->expert_layout();
    const format::ExpertQuant& quant = manifest.quant;
    platform::AlignedBuffer record(layout.record_bytes);
    std::vector<float> decoded;
    const format::VqMatrixShape* shapes[3] = {&layout.gate, &layout.up, &layout.down};
    const uint32_t offsets[3] = {layout.gate_off, layout.up_off, layout.down_off};
    for (const ConvertUnit& unit : plan.units) {
        if (!unit.moe) continue;
        const format::ExpertBank& bank = container->bank(unit.layer);
        std::array<double, 3> e2{}, w2{};
        std::array<std::vector<std::vector<float>>, 3> books;
        for (int k = 0; k < 3; ++k)
            for (int s = 0; s < quant.stages; ++s) {
                const std::span<const float> book = container->codebook(bank.codebook_base + static_cast<uint32_t>(k * quant.stages + s));
                books[static_cast<size_t>(k)].emplace_back(book.begin(), book.end());
            }
        for (uint32_t e = 0; e < bank.experts; ++e) {
            container->read_expert(unit.layer, static_cast<int>(e), record.span());
            uint32_t scale_row = 0;
            for (int k = 0; k < 3; ++k) {
                const uint32_t rows = shapes[k]->rows, cols = shapes[k]->cols;
                decoded.resize(static_cast<size_t>(rows) * cols);
                want.resize(decoded.size());
                const auto* scale_bits = reinterpret_cast<const uint16_t*>(record.data() + layout.scales_off) + scale_row;
                decode_matrix(record.data() + offsets[k], scale_bits, rows, cols, books[static_cast<size_t>(k)], quant,
                              decoded.data());
                source->read_rows(unit.experts[e][static_cast<size_t>(k)], 0, rows, want);
                for (size_t i = 0; i < decoded.size(); ++i) {
                    const double d = static_cast<double>(want[i]) - decoded[i];
                    e2[static_cast<size_t>(k)] += d * d;
                    w2[static_cast<size_t>(k)] += static_cast<double>(want[i]) * want[i];
                }
                scale_row += rows;
            }
            advance();
        }
        const double error = rel(e2[0] + e2[1] + e2[2], w2[0] + w2[1] + w2[2]);
        report["layers"].push_back({{"layer", unit.layer},
                                    {"experts", bank.experts},
                                    {"error", error},
                                    {"error_gate", rel(e2[0], w2[0])},
                                    {"error_up", rel(e2[1], w2[1])},
                                    {"error_down", rel(e2[2], w2[2])}});
        if (!(error <= expert_limit))
            report["failures"].push_back(
                fmt::format("layer {}: expert relative error {:.4g} above {}", unit.layer, error, expert_limit));
    }
    report["ok"] = report["failures"].empty();
    return report;
}

}  // namespace waste::convert
