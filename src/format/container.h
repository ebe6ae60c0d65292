// container.h — an opened v0 container directory (container-v0.md).
//
// Opening validates everything that can be validated without reading expert
// payloads: the manifest (every rule), trunk extents against trunk.bin, the
// codebook records each MoE layer references, and each bank's file size.
// Loading the trunk (load_trunk) is separate so that info and plan work on a
// container of any size. Expert records are read one aligned read each, with
// the always-on header checks and, on request, the CRC-32.
//
// Deliberately not here: what the tensors mean (model/), caching and
// scheduling of reads (runtime/).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "format/expert_record.h"
#include "format/manifest.h"
#include "platform/aligned_buffer.h"
#include "platform/direct_file.h"

namespace waste::format {

struct ContainerOptions {
    bool want_direct_io = true;
    bool verify_checksums = false;
};

// One loaded trunk tensor: its payload and scales in RAM.
struct LoadedTensor {
    const TrunkTensor* info = nullptr;
    std::span<const uint8_t> payload;
    std::span<const uint8_t> scales;
    // Dequantises a row into out (out.size() == cols).
    void row(uint64_t r, std::span<float> out) const;
    std::vector<float> dequantize() const;  // whole tensor, rows*cols
};

// Tensors read into storage of their own, by full name (the vision tower's,
// which live outside tensor_prefix and are read only when asked for).
struct TensorSet {
    platform::AlignedBuffer storage;
    std::map<std::string, LoadedTensor> tensors;
};

class Container {
public:
    static std::unique_ptr<Container> open(const std::string& directory, const ContainerOptions& options);

    const std::string& directory() const { return directory_; }
    const Manifest& manifest() const { return manifest_; }
    const ModelConfig& config() const { return manifest_.config; }
    const ExpertLayout& expert_layout() const { return layout_; }
    // What generation_config.json recommends for sampling (none named when
    // the container has no such file).
    const SamplingDefaults& sampling_defaults() const { return sampling_; }
    bool has_experts() const { return !banks_.empty(); }

    // Every file's bytes together.
    uint64_t container_bytes() const { return container_bytes_; }
    uint64_t codebook_records() const { return codebook_records_; }
    // The I/O mode of the expert banks (all banks share one filesystem in
    // practice; the first bank's probe decides what is reported).
    platform::IoMode expert_io_mode() const;
    std::string expert_io_reason() const;

    // Is this trunk tensor part of the text model (inside tensor_prefix)?
    bool is_text_tensor(const TrunkTensor& tensor) const;
    // Bytes load_trunk allocates: every text tensor, embed_tokens included,
    // with its 64-byte slot alignment (the plan's trunk).
    uint64_t resident_trunk_bytes() const;

    // Reads the text tensors into RAM; checks every f16 scale is finite.
    void load_trunk();
    bool trunk_loaded() const { return trunk_loaded_; }
    // Reads these trunk tensors (full names, any prefix) with load_trunk's
    // checks; throws WASTE_ERR_FORMAT naming a missing one.
    TensorSet load_tensors(const std::vector<std::string>& names) const;
    // Bytes load_tensors allocates for these (absent names count 0).
    uint64_t tensors_bytes(const std::vector<std::string>& names) const;
    // A trunk index entry by full name; nullptr when absent.
    const TrunkTensor* trunk_tensor(const std::string& full_name) const;
    // The loaded trunk's storage (for mlock).
    std::span<const uint8_t> trunk_storage() const { return trunk_storage_.span(); }
    // A loaded text tensor by its name without the prefix ("model.norm.weight");
    // nullptr when absent.
    const LoadedTensor* tensor(const std::string& name_without_prefix) const;
    // Same, but throws WASTE_ERR_FORMAT naming the missing tensor.
    const LoadedTensor& require(const std::string& name_without_prefix) const;

    // Codebooks as f32: [records][entries][vec_dim]; only the referenced ones
    // are filled (gap records stay zero).
    std::span<const float> codebooks() const { return codebook_values_; }
    std::span<const float> codebook(uint32_t record) const;

    // The bank of an MoE layer; throws for a dense layer.
    const ExpertBank& bank(int layer) const;
    const platform::DirectFile& bank_file(int layer) const;
    // Reads expert `expert` of `layer` into buffer (exactly record_bytes,
    // 4096-aligned) and checks it; throws WASTE_ERR_CORRUPT / WASTE_ERR_IO
    // naming the record.
    void read_expert(int layer, int expert, std::span<uint8_t> buffer) const;
    // The checks alone, for records read by another path (async reads).
    void check_expert(int layer, int expert, std::span<const uint8_t> record) const;
    bool verify_checksums() const { return options_.verify_checksums; }

private:
    Container() = default;
    void read_tensors(const std::vector<const TrunkTensor*>& tensors, platform::AlignedBuffer& storage,
                      const std::function<void(const LoadedTensor&)>& bind) const;
    std::string directory_;
    ContainerOptions options_;
    Manifest manifest_;
    ExpertLayout layout_;
    uint64_t container_bytes_ = 0;
    SamplingDefaults sampling_;
    uint64_t trunk_file_bytes_ = 0;
    uint64_t codebook_records_ = 0;
    std::vector<float> codebook_values_;
    std::map<int, platform::DirectFile> banks_;
    bool trunk_loaded_ = false;
    platform::AlignedBuffer trunk_storage_;
    std::map<std::string, LoadedTensor> tensors_;
};

}  // namespace waste::format
