// container_writer.h — writes a v0 container directory (container-v0.md).
//
// Owns the write side of the format: trunk tensors appended one at a time
// (whole, or a block of rows at a time for tensors too large to hold), the
// WCBK codebook records, the expert banks streamed one record at a time
// (header, indices, f16 row scales, CRC-32, zero padding to the 4096-multiple
// record size), the optional files, and manifest.json — written last, because
// its presence is the commit point of a container. Every file goes through
// `name.tmp` -> fsync -> rename (platform/output_file.h), so a failure leaves
// no `.tmp` behind and no manifest that points at half-written files; a
// writer abandoned before finish() also removes the whole files it wrote.
//
// Memory is bounded by the output buffers plus the f16 scales of the one
// trunk tensor being written (1/64 of its Q8G payload): never a whole tensor
// or bank. The output is a function of the input alone: the same calls give
// byte-identical files (manifest key order is the order of the calls and of
// the config object given; no timestamps).
//
// Before committing, the manifest is parsed back with the reader's own rules
// (parse_manifest and the extent checks): the writer never commits a
// container the reader would refuse.
//
// Deliberately not here: where the values come from (synth/, a converter),
// the reader (container.h).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "format/expert_record.h"
#include "format/manifest.h"
#include "format/model_config.h"
#include "platform/aligned_buffer.h"

namespace waste::platform {
class BufferPool;
class OutputFile;
}

namespace waste::format {

// The converter convention (container-v0 §3): F32 for 1-D tensors and tensors
// under 65,536 elements; Q8G for embed_tokens and lm_head; Q4G otherwise —
// except the vision tower and projector (vision_tower.*, mm_projector.*),
// which are Q8G: at 4 bits the tower loses 12–18% of its weights (vision.md
// §1.2), at 8 bits 0.64%.
// quantize_small_matrices: 2-D tensors under 65,536 elements are quantised
// too (convolutions and vectors stay F32), so a small model stores its trunk
// the way a large one does — to measure what Q4G costs on a small model.
// matrices: the format of the tensors the convention stores Q4G (Q4G or
// Q8G: `waste convert --trunk-matrices q8`, the attention and dense FFN at
// 8 bits, as a precise conversion keeps them).
TrunkFormat converter_trunk_format(std::string_view name, std::span<const int64_t> shape,
                                   bool quantize_small_matrices = false, TrunkFormat matrices = TrunkFormat::q4g);

// Bytes of a trunk tensor in trunk.bin (payload + f16 scales), as the codec
// encodes it. Throws WASTE_ERR_INVALID_ARGUMENT for a shape the reader refuses.
uint64_t trunk_tensor_bytes(TrunkFormat fmt, std::span<const int64_t> shape, uint32_t group = 128);

// The expert_quant of a v0 VQ format: "VQ3R" (3 stages x 256 entries, 8-bit
// indices), "VQ2R" (2 x 256), "VQ4P" (4 x 64, four 6-bit indices in 3 bytes);
// vec_dim 8. Throws WASTE_ERR_INVALID_ARGUMENT for any other name.
ExpertQuant standard_expert_quant(std::string_view name);

struct ContainerSpec {
    std::string arch;                  // descriptive: "kimi_linear", "kimi_k3"
    std::string tensor_prefix;         // "" or "language_model."
    nlohmann::ordered_json config;     // the release's config.json, written verbatim
    std::optional<ExpertQuant> quant;  // required when the config has MoE layers
};

struct ContainerWriterOptions {
    bool direct_io = true;                       // bypass the page cache where possible
    size_t buffer_bytes = size_t{16} << 20;      // per output buffer (3 per large file)
};

class ContainerWriter {
public:
    // Validates the config (parse_model_config) and prepares `directory`:
    // creates it, or, if it holds a container, removes its manifest.json
    // first (un-committing it) and then the other files a container may hold
    // (trunk.bin, codebooks.bin, experts-L*.bin, the optional files, their
    // .tmp leftovers). Nothing else in the directory is touched.
    ContainerWriter(std::string directory, ContainerSpec spec, ContainerWriterOptions options = {});
    // Without a successful finish(): removes the container files it wrote.
    ~ContainerWriter();
    ContainerWriter(const ContainerWriter&) = delete;
    ContainerWriter& operator=(const ContainerWriter&) = delete;

    const ModelConfig& config() const { return config_; }
    // The record layout of this model's experts (only with MoE layers).
    const ExpertLayout& expert_layout() const { return layout_; }

    // ---- trunk.bin: tensors packed back to back, each payload then its scales.
    // A whole tensor: rows x cols floats (rows = prod(shape[:-1])), quantised
    // with quantize_tensor. `name` includes the tensor prefix.
    void add_trunk_tensor(const std::string& name, TrunkFormat fmt, std::vector<int64_t> shape,
                          std::span<const float> values, uint32_t group = 128);
    // The same in pieces: begin, then blocks of whole rows (floats to quantise
    // or rows already encoded), then end. The returned layout (row_stride,
    // groups_per_row, ...) says how encoded rows are laid out.
    const TrunkTensor& begin_trunk_tensor(const std::string& name, TrunkFormat fmt, std::vector<int64_t> shape,
                                          uint32_t group = 128);
    void add_trunk_rows(std::span<const float> values);
    // payload: whole rows of row_stride bytes; scales: their f16 group scales,
    // groups_per_row per row (empty for F32).
    void add_trunk_encoded_rows(std::span<const uint8_t> payload, std::span<const uint16_t> scales);
    void end_trunk_tensor();

    // ---- codebooks.bin: one WCBK record; centroids are f16 bits,
    // [entries][vec_dim]. Returns the record index (books of a layer are
    // base + kind*stages + stage, kind 0 gate, 1 up, 2 down).
    uint32_t add_codebook(std::span<const uint16_t> centroids);
    uint32_t codebook_count() const { return codebook_count_; }

    // ---- experts-L{layer}.bin: records in expert-id order 0..experts-1.
    // The layer's 3*stages books must already be written from codebook_base.
    void begin_bank(int layer, uint32_t codebook_base);
    // Index bytes of each matrix in the container layout
    // ([row_block][position][row_in_block][stage]; sizes as expert_layout()
    // says) and the f16 row scales: M_gate, then M_up, then M_down values.
    void add_expert(int expert, std::span<const uint8_t> gate, std::span<const uint8_t> up,
                    std::span<const uint8_t> down, std::span<const uint16_t> scales);
    // The same without a copy: the record's bytes, in the output buffer
    // itself when they fit (record_bytes long, contents stale). The caller
    // writes every byte of [gate_off, payload_end) — indices and scales at the
    // layout's offsets — then end_expert() adds the header, CRC and padding.
    std::span<uint8_t> begin_expert(int expert);
    void end_expert();
    void end_bank();

    // ---- optional files (tokenizer.model, specials.json, chat.json, ...),
    // written whole. Throws for a name the container's own files use.
    void add_file(const std::string& name, std::string_view bytes);

    // Bytes appended to every file so far (manifest excluded until finish).
    uint64_t bytes_written() const;

    // Commits trunk.bin and codebooks.bin, checks every MoE layer has its
    // bank, checks the manifest with the reader's rules, then writes
    // manifest.json. After finish() the directory is a complete container.
    void finish();

private:
    std::string path(const std::string& name) const;
    void finish_commits();

    std::string directory_;
    ContainerSpec spec_;
    ContainerWriterOptions options_;
    ModelConfig config_;
    ExpertLayout layout_;
    bool finished_ = false;
    uint64_t small_file_bytes_ = 0;

    std::unique_ptr<platform::OutputFile> trunk_file_;
    std::vector<TrunkTensor> trunk_;
    std::set<std::string> trunk_names_;
    std::optional<TrunkTensor> open_tensor_;
    uint64_t open_rows_done_ = 0;
    std::vector<uint8_t> open_scales_;      // f16 scales of the open tensor, written after its payload

    std::unique_ptr<platform::OutputFile> codebook_file_;
    uint32_t codebook_count_ = 0;

    std::shared_ptr<platform::BufferPool> pool_;     // output buffers, reused file after file
    std::unique_ptr<platform::OutputFile> bank_file_;
    std::optional<ExpertBank> open_bank_;
    uint32_t next_expert_ = 0;
    std::span<uint8_t> open_record_;        // between begin_expert and end_expert
    bool open_record_staged_ = false;       // open_record_ is staging_, not the output buffer
    platform::AlignedBuffer staging_;       // a record that cannot be claimed in place
    uint64_t bank_bytes_done_ = 0;          // ended banks
    std::vector<std::unique_ptr<platform::OutputFile>> committing_;  // ended banks awaiting fsync + rename
    std::map<int, ExpertBank> banks_;
};

// The manifest's "expert_quant" object, keys in the order the writer (and
// upstream) writes them; the converter writes the same object.
nlohmann::ordered_json expert_quant_json(const ExpertQuant& quant);

}  // namespace waste::format
