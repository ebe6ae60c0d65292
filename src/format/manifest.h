// manifest.h — manifest.json of a v0 container: parsed and validated.
//
// Owns every rule of container-v0.md §2 and the trunk-index rules of §3 that
// need only the manifest and the size of trunk.bin. It does not open files:
// container.h does, and passes the sizes in. Every failure names the key and
// value ("manifest: layers.5.bytes 1000 is not a multiple of experts 8").
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "format/model_config.h"

namespace waste::format {

// A trunk tensor's dimension, at most: the reader's load-time bound (container-v0 §3).
constexpr int64_t max_trunk_dim = int64_t{1} << 26;

enum class TrunkFormat : uint8_t { f32 = 0, q8g = 2, q4g = 3, q3g = 7 };
const char* trunk_format_name(TrunkFormat fmt);

struct TrunkTensor {
    std::string name;               // prefix included
    TrunkFormat fmt = TrunkFormat::f32;
    uint64_t offset = 0;            // payload, absolute in trunk.bin
    uint64_t bytes = 0;             // payload + scales
    std::vector<int64_t> shape;     // PyTorch order
    uint32_t group = 128;           // Q*G group size
    uint64_t scale_offset = 0;      // f16 [rows][groups], Q*G only
    // derived
    uint64_t rows = 0;              // prod(shape[:-1])
    uint64_t cols = 0;              // shape[-1]
    uint64_t groups_per_row = 0;    // ceil(cols / group)
    uint64_t row_stride = 0;        // payload bytes per row
    uint64_t payload_bytes = 0;
    uint64_t scale_bytes = 0;
    uint64_t elements() const { return rows * cols; }
};

enum class ExpertFormat : uint8_t { vq3r, vq2r, vq4p };

struct ExpertQuant {
    ExpertFormat fmt = ExpertFormat::vq3r;
    std::string fmt_name;           // "VQ3R", "VQ2R", "VQ4P"
    int stages = 0;                 // 1..8
    int vec_dim = 0;                // 1..64
    int entries = 0;                // 1..256
    int index_block = 64;           // rows per index block (64 in v0)
    int index_bits = 8;             // 8, or 6 for VQ4P
    double bits_per_weight = 0;
    // bytes of one index entry for one (row, position): S for 8-bit, 3 for VQ4P
    int index_bytes_per_position() const { return index_bits == 6 ? 3 : stages; }
    bool record_fmt_allowed(uint8_t code) const;
    uint64_t codebook_record_bytes() const { return 16 + static_cast<uint64_t>(entries) * vec_dim * 2; }
};

struct ExpertBank {
    int layer = 0;
    std::string file;
    uint32_t experts = 0;
    uint64_t bytes = 0;             // whole bank
    uint32_t codebook_base = 0;
    uint64_t record_bytes = 0;      // bytes / experts
};

struct Manifest {
    int format_version = 0;
    std::string arch;
    std::string tensor_prefix;
    nlohmann::json config_json;
    ModelConfig config;
    ExpertQuant quant;
    bool has_quant = false;
    std::map<int, ExpertBank> banks;           // by layer
    std::vector<TrunkTensor> trunk;            // index order
    std::map<std::string, size_t> trunk_by_name;

    const TrunkTensor* find(const std::string& name) const;
};

// Parses and validates manifest.json text. Throws waste::Error(WASTE_ERR_FORMAT).
Manifest parse_manifest(std::string_view text);

// The rules that need the sizes of the other files: trunk extents inside
// trunk.bin; codebook_base + 3*stages inside codebooks.bin.
void check_trunk_extents(const Manifest& manifest, uint64_t trunk_file_bytes);
void check_codebook_bases(const Manifest& manifest, uint64_t codebook_records);

// Helpers the writer shares: the byte layout of a Q*G / F32 tensor.
void derive_trunk_layout(TrunkTensor& tensor, const std::string& where);

}  // namespace waste::format
