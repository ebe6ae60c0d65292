// usage_hotlist.h — the learned hotlist (`usage.waste`, `--learn`): how
// often each expert record was asked for, kept across runs so the next open
// can warm the expert cache with the most used records first.
//
// File (little-endian): u32 magic "WUSE", u32 version 1, u32 layers, u32
// experts, u64 counts [layers][experts] (dense layers all zero). It is a
// hint, not model data: a file that does not match the model (other shape,
// wrong size, bad magic) is ignored with a note, never an error at open.
// Not here: the counting (runtime/engine) and the warming (Engine::warm_cache).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "format/container.h"
#include "runtime/cache_policy.h"

namespace waste::runtime {

struct UsageFile {
    bool loaded = false;
    std::string note;               // what happened, for info
    std::vector<uint64_t> counts;   // [layers][experts], or empty
};

// The default path: usage.waste in the container directory.
std::string default_usage_path(const format::Container& container);

// Reads the hotlist at path for this model. A missing file is loaded=false
// with note "none"; a mismatched one loaded=false with the reason.
UsageFile read_usage_file(const std::string& path, const format::ModelConfig& config);

// Writes counts (the shape of config) atomically: path.tmp, fsync, rename.
// WASTE_ERR_IO naming the path when the directory is not writable.
void write_usage_file(const std::string& path, const format::ModelConfig& config, const std::vector<uint64_t>& counts);

// The records with a non-zero count, most used first (ties: layer, then
// expert ascending), for Engine::warm_cache.
std::vector<CacheKey> hotlist_order(const format::ModelConfig& config, const std::vector<uint64_t>& counts);

}  // namespace waste::runtime
