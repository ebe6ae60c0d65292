#include "format/expert_record.h"

#include <cstring>

#include "platform/crc32.h"
#include "platform/error.h"

namespace waste::format {
namespace {

template <typename T>
T load(const uint8_t* bytes) {
    T value;
    std::memcpy(&value, bytes, sizeof value);  // little-endian host (checked in platform)
    return value;
}
template <typename T>
void store(uint8_t* bytes, T value) {
    std::memcpy(bytes, &value, sizeof value);
}

VqMatrixShape matrix_shape(uint32_t rows, uint32_t cols, const ExpertQuant& quant) {
    VqMatrixShape shape{rows, cols, 0};
    const uint64_t row_blocks = (rows + 63) / 64;
    shape.index_bytes = row_blocks * 64 * (cols / quant.vec_dim) * quant.index_bytes_per_position();
    return shape;
}

}  // namespace

ExpertRecordHeader decode_expert_header(const uint8_t* b) {
    ExpertRecordHeader h;
    h.magic = load<uint32_t>(b + 0);
    h.layer = load<uint16_t>(b + 4);
    h.expert = load<uint16_t>(b + 6);
    h.fmt = b[8];
    h.flags = b[9];
    h.codebook_id = load<uint16_t>(b + 10);
    h.lowrank_id = load<uint16_t>(b + 12);
    h.reserved0 = load<uint16_t>(b + 14);
    h.blocks = load<uint32_t>(b + 16);
    h.gate_off = load<uint32_t>(b + 20);
    h.up_off = load<uint32_t>(b + 24);
    h.down_off = load<uint32_t>(b + 28);
    h.scales_off = load<uint32_t>(b + 32);
    h.crc32 = load<uint32_t>(b + 36);
    h.reserved1[0] = load<uint32_t>(b + 40);
    h.reserved1[1] = load<uint32_t>(b + 44);
    return h;
}

void encode_expert_header(const ExpertRecordHeader& h, uint8_t* b) {
    store(b + 0, h.magic);
    store(b + 4, h.layer);
    store(b + 6, h.expert);
    b[8] = h.fmt;
    b[9] = h.flags;
    store(b + 10, h.codebook_id);
    store(b + 12, h.lowrank_id);
    store(b + 14, h.reserved0);
    store(b + 16, h.blocks);
    store(b + 20, h.gate_off);
    store(b + 24, h.up_off);
    store(b + 28, h.down_off);
    store(b + 32, h.scales_off);
    store(b + 36, h.crc32);
    store(b + 40, h.reserved1[0]);
    store(b + 44, h.reserved1[1]);
}

ExpertLayout expert_layout(const ModelConfig& config, const ExpertQuant& quant) {
    ExpertLayout layout;
    const uint32_t intermediate = static_cast<uint32_t>(config.moe_intermediate);
    const uint32_t input = static_cast<uint32_t>(config.expert_input());
    layout.gate = matrix_shape(intermediate, input, quant);
    layout.up = matrix_shape(intermediate, input, quant);
    layout.down = matrix_shape(input, intermediate, quant);
    const uint64_t up_off = expert_header_bytes + layout.gate.index_bytes;
    const uint64_t down_off = up_off + layout.up.index_bytes;
    const uint64_t scales_off = down_off + layout.down.index_bytes;
    layout.scale_count = 2 * intermediate + input;
    layout.payload_end = scales_off + 2ull * layout.scale_count;
    layout.record_bytes = (layout.payload_end + direct_io_block - 1) / direct_io_block * direct_io_block;
    if (layout.record_bytes > 0xFFFFFFFFull)
        fail_format("expert record of {} bytes does not fit the 32-bit offsets of format v0", layout.record_bytes);
    layout.up_off = static_cast<uint32_t>(up_off);
    layout.down_off = static_cast<uint32_t>(down_off);
    layout.scales_off = static_cast<uint32_t>(scales_off);
    layout.record_fmt = quant.fmt == ExpertFormat::vq4p ? 8 : 4;
    return layout;
}

void check_expert_record(std::span<const uint8_t> record, int layer, int expert, const ExpertBank& bank,
                         const ExpertQuant& quant, const ExpertLayout& layout, uint64_t codebook_records) {
    auto bad = [&](fmt::string_view format, auto&&... args) {
        throw Error(WASTE_ERR_CORRUPT,
                    fmt::format("expert {} of layer {}: {}", expert, layer, fmt::vformat(format, fmt::make_format_args(args...))));
    };
    if (record.size() != bank.record_bytes)
        bad("read {} bytes, the record is {} bytes", record.size(), bank.record_bytes);
    if (record.size() < expert_header_bytes) bad("record of {} bytes is shorter than its header", record.size());
    const ExpertRecordHeader h = decode_expert_header(record.data());
    if (h.magic != expert_record_magic) bad("magic 0x{:08x} is not WEXP", h.magic);
    if (h.layer != layer) bad("header says layer {}", h.layer);
    if (h.expert != expert) bad("header says expert {}", h.expert);
    if (static_cast<uint64_t>(h.blocks) * direct_io_block != bank.record_bytes)
        bad("header says {} blocks of 4096, the bank's records are {} bytes", h.blocks, bank.record_bytes);
    if (!quant.record_fmt_allowed(h.fmt)) bad("fmt {} disagrees with the manifest's {}", h.fmt, quant.fmt_name);
    if (h.lowrank_id != 0) bad("lowrank_id {} is not 0 (format v0)", h.lowrank_id);
    if (h.codebook_id != bank.codebook_base)
        bad("codebook_id {} is not the layer's codebook_base {}", h.codebook_id, bank.codebook_base);
    if (static_cast<uint64_t>(h.codebook_id) + 3ull * quant.stages > codebook_records)
        bad("codebook_id {} + 3*{} stages exceeds the {} codebooks", h.codebook_id, quant.stages, codebook_records);
    if (h.gate_off != layout.gate_off) bad("gate_off {} is not {}", h.gate_off, layout.gate_off);
    if (h.up_off != layout.up_off) bad("up_off {} is not {} (gate [{}, {}])", h.up_off, layout.up_off, layout.gate.rows, layout.gate.cols);
    if (h.down_off != layout.down_off) bad("down_off {} is not {}", h.down_off, layout.down_off);
    if (h.scales_off != layout.scales_off) bad("scales_off {} is not {}", h.scales_off, layout.scales_off);
    if (layout.payload_end > record.size())
        bad("scales end at byte {}, past the record's {} bytes", layout.payload_end, record.size());
}

void verify_expert_checksum(std::span<const uint8_t> record, int layer, int expert, const ExpertLayout& layout) {
    WASTE_CHECK(record.size() >= layout.payload_end);
    const ExpertRecordHeader h = decode_expert_header(record.data());
    const uint32_t actual =
        platform::crc32(record.data() + expert_header_bytes, layout.payload_end - expert_header_bytes);
    if (actual != h.crc32)
        throw Error(WASTE_ERR_CORRUPT, fmt::format("expert {} of layer {}: checksum mismatch (stored 0x{:08x}, computed 0x{:08x})",
                                                   expert, layer, h.crc32, actual));
}

}  // namespace waste::format

namespace waste::format {

void check_expert_indices(std::span<const uint8_t> record, int layer, int expert, const ExpertQuant& quant,
                          const ExpertLayout& layout) {
    const bool packed6 = quant.index_bits == 6;
    const unsigned limit = packed6 ? 64u : 256u;
    if (static_cast<unsigned>(quant.entries) >= limit) return;
    const uint8_t* begin = record.data() + layout.gate_off;
    const uint8_t* end = record.data() + layout.scales_off;
    const unsigned entries = static_cast<unsigned>(quant.entries);
    if (!packed6) {
        for (const uint8_t* p = begin; p < end; ++p)
            if (*p >= entries)
                throw Error(WASTE_ERR_CORRUPT, fmt::format("expert {} of layer {}: index {} at byte {} is not below entries {}",
                                                           expert, layer, *p, p - record.data(), entries));
        return;
    }
    for (const uint8_t* p = begin; p + 3 <= end; p += 3) {
        const unsigned values[4] = {p[0] & 63u, (p[0] >> 6) | ((p[1] & 15u) << 2), (p[1] >> 4) | ((p[2] & 3u) << 4),
                                    static_cast<unsigned>(p[2] >> 2)};
        for (unsigned value : values)
            if (value >= entries)
                throw Error(WASTE_ERR_CORRUPT, fmt::format("expert {} of layer {}: index {} at byte {} is not below entries {}",
                                                           expert, layer, value, p - record.data(), entries));
    }
}

}  // namespace waste::format
