// weight_source.h — what the converter reads a checkpoint through.
//
// A logical tensor by its release name (prefix included), its shape, a
// description of how it is stored, the shard files that hold its bytes, and
// its values decoded to f32 one block of rows at a time — so that a 1.2-billion
// value embedding never sits in memory whole. Rows are prod(shape[:-1]) and
// each row has shape[-1] values.
//
// The checkpoint reader (checkpoint.h) implements it for a safetensors
// directory; tests implement it in memory.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace waste::convert {

struct SourceTensor {
    std::vector<int64_t> shape;       // PyTorch order
    std::string storage;              // "BF16", "F8_E4M3 block 128x128", "MXFP4", ...
    std::vector<std::string> shards;  // file names (relative to the source directory) holding its bytes
};

class WeightSource {
public:
    virtual ~WeightSource() = default;
    virtual std::vector<std::string> names() const = 0;  // every logical tensor, sorted
    virtual bool has(const std::string& name) const = 0;
    // Throws waste::Error naming the tensor when it is absent.
    virtual SourceTensor info(const std::string& name) const = 0;
    // Rows [first, first + count) as f32 into out (count * shape[-1] values).
    virtual void read_rows(const std::string& name, uint64_t first, uint64_t count, std::span<float> out) const = 0;
    // Every shard file of the checkpoint (relative names).
    virtual std::vector<std::string> shards() const = 0;
    // Closes whatever the source holds open on a shard about to be deleted.
    virtual void release_shard(const std::string& shard) const { (void)shard; }
    // True for a shard an earlier run reclaimed (deleted): its tensors are
    // listed with their shapes but cannot be read.
    virtual bool shard_reclaimed(const std::string& shard) const { (void)shard; return false; }
};

// Rows [first, first + count) of a tensor stored with `stored_cols` columns
// where the release has fewer (a conv kernel [out, in, kh, kw] stored as
// [out, in·kh·kw], vision.md §1.2): the same values in the same order, read
// as stored_cols / shape[-1] of the source's rows per stored row. Throws
// WASTE_ERR_FORMAT when stored_cols is not a multiple of shape[-1].
void read_stored_rows(const WeightSource& source, const std::string& name, uint64_t stored_cols, uint64_t first,
                      uint64_t count, std::span<float> out);

}  // namespace waste::convert
