// checkpoint.h — a published Hugging Face checkpoint directory, read-only.
//
// API contract for the converter (keep these names stable):
//
//   Checkpoint ck = Checkpoint::open(dir);   // config.json + index (or one
//                                            // model.safetensors), every shard's
//                                            // header checked; throws waste::Error
//   ck.config()         text config: config.json's `text_config` when nested
//                       (multimodal releases such as K3), else the whole file
//   ck.full_config()    config.json as read (outer architectures/model_type,
//                       quantization_config, vision config ...)
//   ck.names()          logical weight names, natural order (layer 2 < 10)
//   ck.has(name) / ck.info(name)   TensorInfo: encoding, logical shape, parts
//   ck.read_f32(name)              the whole weight decoded to f32
//   ck.read_f32(name, out)         into a caller buffer of info(name).numel
//   ck.read_f32_rows(name, r0, n, out)   rows [r0, r0+n) of the [rows, cols]
//                       view (rows = product of all dims but the last), so a
//                       4.7 GB f32 embedding can be streamed in slices
//   ck.shards()         every shard with the physical tensors and the logical
//                       weights it holds (a weight whose scale lives in
//                       another shard is listed under both) — for --reclaim
//   ck.release_shard(file)   closes its descriptor before it is deleted
//
// A logical weight is what the model means by a name, whatever the release
// stored (see WeightEncoding): the converter asks for
// "model.layers.3.block_sparse_moe.experts.7.w1.weight" and gets f32 values
// whether that is bf16, FP8 with `..._scale_inv`, MXFP4 `..._packed` +
// `..._scale`, or INT4 `..._packed` + `..._scale` + `..._shape`. The
// companion tensors are folded into their weight and do not appear in names().
//
// Decoded values are checked: a NaN or infinity is refused naming the
// tensor, the element and the raw value. Reads are pread()s; peak memory is
// the caller's buffer plus a few MiB of raw bytes. Reads are thread-safe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "convert/safetensors.h"

namespace waste::convert {

enum class WeightEncoding : uint8_t {
    plain,      // F32 / F16 / BF16 (integer dtypes are not weights: reading one is refused)
    fp8_block,  // F8_E4M3 `W` + `W_scale_inv` [ceil(out/B0), ceil(in/B1)] (other-families §1)
    mxfp4,      // U8 `W_packed` [.., out, in/2] + U8 `W_scale(s)` [.., out, in/32]; or
                // U8 `W_blocks` [.., out, G, 16] + U8 `W_scales` [.., out, G] (other-families §8)
    int4_pack,  // I32 `W_packed` [out, in/8] + `W_scale` [out, in/32] (+ I64 `W_shape`) (other-families §1)
};

const char* encoding_name(WeightEncoding encoding);  // "plain", "fp8_block", "mxfp4", "int4_pack"

struct TensorInfo {
    std::string name;                // logical name
    WeightEncoding encoding = WeightEncoding::plain;
    Dtype dtype = Dtype::f32;        // stored dtype of the main part
    std::vector<int64_t> shape;      // logical (decoded) shape
    uint64_t numel = 0;
    std::string shard;               // shard file of the main part
    std::vector<std::string> parts;  // physical tensors: main part first, then scales / shape
    std::vector<std::string> part_shards;  // shard of each part

    uint64_t rows() const;  // product of all dims but the last (1 for 0-D and 1-D)
    uint64_t cols() const;  // the last dim (numel for 1-D, 1 for 0-D)
};

struct ShardInfo {
    std::string file;                  // file name inside the checkpoint directory
    uint64_t bytes = 0;                // file size
    std::vector<std::string> tensors;  // physical tensors the index assigns to it, natural order
    std::vector<std::string> weights;  // logical weights with at least one part here, natural order
};

// A shard deleted by `waste convert --reclaim on`: its safetensors header as
// the converter saved it before the delete, and the file's size then.
struct ReclaimedShard {
    std::string header_json;
    uint64_t file_bytes = 0;
    // The bytes of its tiny tensors (an INT4 weight's `_shape`): indexing the
    // checkpoint reads them, so a resumed run needs them after the delete.
    std::map<std::string, std::string, std::less<>> kept;
};

struct CheckpointOpenOptions {
    // Shards (file names) the caller knows were reclaimed. When such a shard is
    // absent it is not opened: its tensors' names, dtypes and shapes come from
    // the recorded header (so grouping and shape checks still run) and reading
    // any of them fails naming the tensor and the shard. Any other missing
    // shard is refused as always. A listed shard that is present is read.
    std::map<std::string, ReclaimedShard, std::less<>> reclaimed;
};

class Checkpoint {
public:
    static Checkpoint open(const std::filesystem::path& dir, const CheckpointOpenOptions& options = {});

    const std::filesystem::path& dir() const { return dir_; }
    const nlohmann::json& config() const;       // the text config
    const nlohmann::json& full_config() const { return full_config_; }
    bool has_nested_text_config() const { return nested_; }
    std::string architecture() const;  // full_config().architectures[0], else the text config's, else ""
    std::string model_type() const;   // full_config().model_type, else the text config's, else ""

    bool has(std::string_view name) const;
    const TensorInfo& info(std::string_view name) const;  // unknown name: WASTE_ERR_FORMAT naming it
    const std::vector<std::string>& names() const { return names_; }
    const std::vector<ShardInfo>& shards() const { return shard_infos_; }

    std::vector<float> read_f32(std::string_view name) const;
    void read_f32(std::string_view name, std::span<float> out) const;
    void read_f32_rows(std::string_view name, uint64_t row_begin, uint64_t row_count, std::span<float> out) const;

    // Raw access for what the logical view does not cover (e.g. metadata).
    const SafetensorsFile& shard_file(std::string_view file) const;
    void release_shard(std::string_view file) const;

private:
    struct Part {
        const SafetensorsFile* file = nullptr;
        const TensorEntry* entry = nullptr;
    };
    struct Weight {
        TensorInfo info;
        Part main, scale;
        uint64_t block_rows = 0, block_cols = 0;  // fp8 block; int4 group in block_cols
    };

    const Weight& weight(std::string_view name) const;
    void read_plain_elements(const Weight& w, uint64_t first, uint64_t count, float* out) const;
    void read_encoded_rows(const Weight& w, uint64_t row_begin, uint64_t row_count, float* out) const;
    void check_finite(const Weight& w, uint64_t first_element, const float* values, size_t count) const;

    std::filesystem::path dir_;
    nlohmann::json full_config_;
    nlohmann::json text_config_;
    bool nested_ = false;
    std::vector<SafetensorsFile> files_;  // one per shard, in shard_infos_ order
    std::vector<ShardInfo> shard_infos_;
    std::map<std::string, Weight, std::less<>> weights_;
    std::vector<std::string> names_;
};

// Natural order: digit runs compare as numbers ("layers.2." < "layers.10.").
bool natural_less(std::string_view a, std::string_view b);

}  // namespace waste::convert
