// session_file.h — the session state file (container-v0 §7): a 64-byte
// header (u32 'WDAS', u32 version 1, 12 i32 shape fields and the position,
// 2 u32: 0 reserved, or num_key_value_heads and head_dim when the model has GQA
// layers), then each layer's state in order, the block residuals and
// the residual stream; the file ends exactly there.
//
// Loading treats the file as hostile: the header is checked against the open
// model field by field and the exact size against what the header implies
// before a byte of state is touched; every value must be finite. A refused
// file leaves the state reset, never partly loaded.
//
// Not here: the logits after a load (runtime::Session recomputes them from
// the residual stream).
#pragma once

#include <cstdint>
#include <string>

#include "format/model_config.h"
#include "model/session_state.h"

namespace waste::model {

inline constexpr uint32_t session_file_magic = 0x53414457u;  // 'WDAS' little-endian
inline constexpr uint32_t session_file_version = 1;
inline constexpr size_t session_file_header_bytes = 64;
// Saving writes through this many buffers of this size (and a writer
// thread); the memory plan counts them, since a save may come at any time.
inline constexpr size_t session_file_write_buffer_bytes = size_t{1} << 20;
inline constexpr int session_file_write_buffers = 2;

// Writes path.tmp, fsyncs, renames to path. Throws WASTE_ERR_IO naming the path.
void save_session_state(const format::ModelConfig& config, const SessionState& state, const std::string& path);

// Replaces state (built for config) with the file's. On any failure the state
// is reset and the error names the file and what is wrong: WASTE_ERR_IO (cannot
// read), WASTE_ERR_FORMAT (not a state file, another model's shape, too many
// tokens for the context), WASTE_ERR_CORRUPT (truncated, trailing bytes, non-finite values).
void load_session_state(const format::ModelConfig& config, const std::string& path, SessionState& state);

}  // namespace waste::model
