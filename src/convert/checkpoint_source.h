// checkpoint_source.h — a WeightSource over an open safetensors checkpoint
// (checkpoint.h), and the release's config.json with its key order kept.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "convert/weight_source.h"

namespace waste::convert {

class Checkpoint;

// The source borrows the checkpoint, which must outlive it.
std::unique_ptr<WeightSource> checkpoint_source(const Checkpoint& checkpoint);

// SOURCE_DIR/config.json as an ordered JSON object; throws naming the file.
nlohmann::ordered_json read_release_config(const std::string& source_dir);

}  // namespace waste::convert
