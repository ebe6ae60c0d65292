// record_fuzz.cpp — libFuzzer target over the expert-record checks.
//
// The input is one expert record's bytes. It is checked as expert 3 of layer
// 1 of a bank shaped like the upstream tiny fixture (hidden 128, experts of
// 64, 8 per layer, 12288-byte records, 27 codebooks), under three expert
// quantisations: the fixture's VQ3R (3 x 256), VQ4P (4 x 64, 6-bit packed
// indices) and a 2-stage VQ2R with 200 entries (so every index byte is range
// checked). For each: the always-on header checks on the input exactly as
// given (wrong sizes included), then on the input zero-padded or truncated
// to the record size in a 4096-aligned buffer, then the index range check
// and the CRC-32. Only waste::Error may come out; the header must survive a
// decode/encode round trip bit for bit.
// Seeds: fuzz/seeds/record_fuzz/ (real records from the fixture banks).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "format/expert_record.h"
#include "format/manifest.h"
#include "platform/aligned_buffer.h"
#include "platform/error.h"

namespace {

using namespace waste::format;

struct Variant {
    ExpertQuant quant;
    ExpertLayout layout;
    ExpertBank bank;
};

Variant make_variant(ExpertFormat fmt, const char* name, int stages, int entries, int index_bits) {
    ModelConfig config;
    config.hidden = 128;
    config.moe_intermediate = 64;
    config.experts = 8;
    Variant v;
    v.quant.fmt = fmt;
    v.quant.fmt_name = name;
    v.quant.stages = stages;
    v.quant.vec_dim = 8;
    v.quant.entries = entries;
    v.quant.index_bits = index_bits;
    v.layout = expert_layout(config, v.quant);
    v.bank.layer = 1;
    v.bank.file = "experts-L1.bin";
    v.bank.experts = 8;
    v.bank.record_bytes = v.layout.record_bytes;
    v.bank.bytes = v.bank.record_bytes * 8;
    v.bank.codebook_base = 0;
    return v;
}

const std::vector<Variant>& variants() {
    static const std::vector<Variant> all = {
        make_variant(ExpertFormat::vq3r, "VQ3R", 3, 256, 8),
        make_variant(ExpertFormat::vq4p, "VQ4P", 4, 64, 6),
        make_variant(ExpertFormat::vq2r, "VQ2R", 2, 200, 8),
    };
    return all;
}

constexpr int layer = 1;
constexpr int expert = 3;
constexpr uint64_t codebook_records = 27;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size >= expert_header_bytes) {
        uint8_t encoded[expert_header_bytes];
        encode_expert_header(decode_expert_header(data), encoded);
        if (std::memcmp(encoded, data, expert_header_bytes) != 0) __builtin_trap();
    }
    for (const Variant& v : variants()) {
        const std::span<const uint8_t> raw(data, size);
        try {
            check_expert_record(raw, layer, expert, v.bank, v.quant, v.layout, codebook_records);
            check_expert_indices(raw, layer, expert, v.quant, v.layout);
            verify_expert_checksum(raw, layer, expert, v.layout);
        } catch (const waste::Error&) {
        }
        waste::platform::AlignedBuffer record(v.bank.record_bytes);
        std::memcpy(record.data(), data, std::min<size_t>(size, record.size()));
        try {
            check_expert_record(record.span(), layer, expert, v.bank, v.quant, v.layout, codebook_records);
            check_expert_indices(record.span(), layer, expert, v.quant, v.layout);
            verify_expert_checksum(record.span(), layer, expert, v.layout);
        } catch (const waste::Error&) {
        }
    }
    return 0;
}
