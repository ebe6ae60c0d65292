// converter.h — `waste convert`: a Kimi-family checkpoint to a v0 container.
//
// Streams the checkpoint unit by unit (kimi_layout.h): trunk tensors by the
// converter's format rule (container-v0 §3: F32 for 1-D and < 65,536
// values, Q8G for embed_tokens/lm_head, Q4G otherwise), and for each MoE
// layer its 3*S codebooks fitted on a seeded sample of experts and its bank,
// every expert encoded with them. Memory holds one expert (plus the fitting
// sample and one block of trunk rows), whatever the model's size.
//
// Resumable: each finished unit is recorded in OUT/.waste-convert/ledger.json
// (written tmp + fsync + rename) after its files are fsynced and read back;
// a rerun with the same source and options skips what the ledger lists and
// redoes the rest, and the result is byte-identical to an uninterrupted run.
// Trunk tensors of a unit go to a part file that is joined into trunk.bin at
// the end, codebooks likewise; banks are written in place. manifest.json is
// written last (the commit point).
//
// --reclaim on saves a shard's safetensors header in the work folder, then
// records the shard in the ledger, then deletes it; a resumed run opens such
// shards from their saved headers (shapes and dtypes known, reads refused)
// and refuses up front if a unit still to do needs one.
//
// Deliberately not here: reading safetensors (checkpoint.h), the tensor list
// (kimi_layout.h), k-means and encoding (vq_fit.h).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "convert/tokenizer_files.h"
#include "convert/weight_source.h"
#include "format/manifest.h"
#include "format/trunk_codec.h"

namespace waste::convert {

enum class Reclaim { off, dry, on };

struct ConvertOptions {
    std::string quant = "VQ3R";   // VQ3R, VQ2R or VQ4P
    int stages = 0;               // 0: the format's (3, 2, 4)
    int entries = 0;              // 0: the format's (256, 256, 64)
    unsigned jobs = 0;            // threads; 0 = one per core
    uint64_t seed = 1;            // k-means seeding and the fitting sample
    int sample_experts = 16;      // experts of a layer the codebooks are fitted on
    uint64_t train_vectors = 1u << 16;  // normalised 8-vectors per (layer, kind) for k-means
    int iterations = 12;          // Lloyd iterations per stage at most
    bool quantize_small_matrices = false;  // format::converter_trunk_format
    format::TrunkFormat trunk_matrices = format::TrunkFormat::q4g;   // the same, Q4G or Q8G
    format::TrunkScales trunk_scales = format::TrunkScales::fitted;  // format/trunk_codec.h
    Reclaim reclaim = Reclaim::off;
    // done / total work in bytes of output; false cancels (WASTE_ERR_CANCELLED).
    std::function<bool(uint64_t done, uint64_t total)> progress;
    // One JSON object per finished unit ({"unit", "layer", "seconds", "error", ...}),
    // and one per reclaimed (or, dry, reclaimable) shard.
    std::function<void(const nlohmann::json& event)> event;
};

struct CheckpointOpenOptions;

// The shards OUT's ledger says were reclaimed, with the headers recorded
// before each delete (OUT/.waste-convert/reclaimed-SHARD.header), for
// Checkpoint::open. Empty when there is no ledger. A ledger naming a shard
// whose recorded header is missing or unreadable is refused naming both.
CheckpointOpenOptions recorded_reclaimed_shards(const std::string& out_dir);

// Converts a checkpoint directory, or a GGUF file (gguf_source.h). Throws
// waste::Error; on failure nothing is published (no manifest.json), and what
// was finished stays recorded for a rerun. Returns the summary: per-layer
// weight error, totals, skipped tensors.
nlohmann::json convert_checkpoint(const std::string& source_dir, const std::string& out_dir,
                                  const ConvertOptions& options);

// The same over an already-open source (tests): config_json is the release's
// config.json; tokenizer files are read from source_dir when it is not empty.
nlohmann::json convert_source(const WeightSource& source, const nlohmann::ordered_json& config_json,
                              const std::string& source_dir, const std::string& out_dir,
                              const ConvertOptions& options);

// What a release ships beside config.json and its weights, when the source
// is not a release directory (a GGUF file: gguf_source.h).
struct ReleaseFiles {
    TokenizerFiles tokenizer;
    std::optional<std::string> generation_config;  // written as generation_config.json
};

// The same with those files given; --reclaim is refused (there are no shards).
nlohmann::json convert_release(const WeightSource& source, const nlohmann::ordered_json& config_json,
                               const ReleaseFiles& files, const std::string& out_dir, const ConvertOptions& options);

}  // namespace waste::convert
