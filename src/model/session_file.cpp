#include "model/session_file.h"

#include <array>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <span>
#include <vector>

#include <fmt/format.h>

#include "platform/error.h"
#include "platform/output_file.h"
#include "platform/utf8_path.h"

namespace waste::model {
namespace {

static_assert(std::endian::native == std::endian::little, "the session file is little-endian; add byte swaps");

constexpr int shape_fields = 12;
constexpr const char* field_names[shape_fields] = {"n_layers", "hidden",  "kda_heads",      "kda_dim",
                                                   "conv_kernel", "n_heads", "qk_nope",   "qk_rope",
                                                   "v_head",  "attn_res_block", "pos", "n_block_residuals"};
constexpr int pos_field = 10, blocks_field = 11;

std::array<int32_t, shape_fields> header_fields(const format::ModelConfig& c, const SessionState& s) {
    return {c.layers,  c.hidden,   c.kda_heads, c.kda_head_dim,     c.conv_kernel,
            c.heads,   c.qk_nope,  c.qk_rope,   c.v_head,           c.attn_res_block,
            static_cast<int32_t>(s.position), static_cast<int32_t>(s.n_blocks)};
}

// The two words after the shape fields: 0 for Kimi and DeepSeek (reserved:
// written 0, not read),
// num_key_value_heads and head_dim for a model with GQA layers (Qwen3), so a
// state saved from another GQA shape is refused by name.
std::array<uint32_t, 2> gqa_fields(const format::ModelConfig& c) {
    if (c.gqa_layer_count() == 0) return {0, 0};
    return {static_cast<uint32_t>(c.kv_heads), static_cast<uint32_t>(c.head_dim)};
}

}  // namespace

void save_session_state(const format::ModelConfig& c, const SessionState& s, const std::string& path) {
    platform::OutputFileOptions options;
    options.want_direct = false;  // a state file is read back soon; let the page cache keep it
    options.buffer_bytes = session_file_write_buffer_bytes;
    options.buffers = session_file_write_buffers;
    platform::OutputFile out(path, options);
    auto write = [&](const void* data, size_t bytes) {
        out.write(std::span<const uint8_t>(static_cast<const uint8_t*>(data), bytes));
    };
    const uint32_t magic[2] = {session_file_magic, session_file_version};
    write(magic, sizeof magic);
    const auto fields = header_fields(c, s);
    write(fields.data(), sizeof(int32_t) * fields.size());
    const auto gqa = gqa_fields(c);
    write(gqa.data(), sizeof(uint32_t) * gqa.size());
    for_each_state_field(c, s, s.position, s.n_blocks, [&](const StateSpan<const float>& span) {
        if (span.field == StateField::latent || span.field == StateField::kv) {  // an attention cache's i32 n_kv comes first
            WASTE_CHECK(s.layers[span.layer].n_kv == s.position);
            const int32_t n_kv = static_cast<int32_t>(s.position);
            write(&n_kv, sizeof n_kv);
        }
        write(span.data, sizeof(float) * span.floats);
    });
    out.commit();
    const std::filesystem::path parent = std::filesystem::absolute(platform::utf8_path(path)).parent_path();
    platform::sync_directory(platform::utf8_text(parent));
}

void load_session_state(const format::ModelConfig& c, const std::string& path, SessionState& s) {
    s.reset();
    try {
        std::ifstream file(platform::utf8_path(path), std::ios::binary);
        if (!file) fail(WASTE_ERR_IO, "state file {}: cannot open: {}", path, std::strerror(errno));
        std::error_code size_error;
        const uint64_t file_bytes = std::filesystem::file_size(platform::utf8_path(path), size_error);
        if (size_error) fail(WASTE_ERR_IO, "state file {}: cannot stat: {}", path, size_error.message());
        if (file_bytes < session_file_header_bytes)
            fail(WASTE_ERR_CORRUPT, "state file {}: {} bytes, shorter than the {}-byte header", path, file_bytes,
                 session_file_header_bytes);
        uint8_t header[session_file_header_bytes];
        if (!file.read(reinterpret_cast<char*>(header), sizeof header))
            fail(WASTE_ERR_IO, "state file {}: cannot read the header", path);
        uint32_t magic = 0, version = 0;
        std::memcpy(&magic, header, 4);
        std::memcpy(&version, header + 4, 4);
        if (magic != session_file_magic)
            fail(WASTE_ERR_FORMAT, "state file {}: magic 0x{:08x} is not 'WDAS' (0x{:08x}); not a session state file", path,
                 magic, session_file_magic);
        if (version != session_file_version)
            fail(WASTE_ERR_FORMAT, "state file {}: version {}, this build reads version {}", path, version,
                 session_file_version);
        std::array<int32_t, shape_fields> got{};
        std::memcpy(got.data(), header + 8, sizeof(int32_t) * shape_fields);
        const auto want = header_fields(c, s);
        for (int i = 0; i < shape_fields; ++i)
            if (i != pos_field && i != blocks_field && got[i] != want[i])
                fail(WASTE_ERR_FORMAT, "state file {}: saved from a model with {} {}, this model has {} {}", path,
                     field_names[i], got[i], field_names[i], want[i]);
        std::array<uint32_t, 2> got_gqa{};
        std::memcpy(got_gqa.data(), header + 8 + sizeof(int32_t) * shape_fields, sizeof(uint32_t) * got_gqa.size());
        const auto want_gqa = gqa_fields(c);
        constexpr const char* gqa_names[2] = {"num_key_value_heads", "head_dim"};
        for (int i = 0; i < 2 && c.gqa_layer_count() > 0; ++i)  // (reserved, and ignored, without GQA layers)
            if (got_gqa[i] != want_gqa[i])
                fail(WASTE_ERR_FORMAT, "state file {}: saved from a model with {} {}, this model has {} {}", path,
                     gqa_names[i], got_gqa[i], gqa_names[i], want_gqa[i]);
        const int32_t position = got[pos_field], blocks = got[blocks_field];
        if (position < 0 || static_cast<uint32_t>(position) > s.context_length)
            fail(WASTE_ERR_FORMAT, "state file {}: pos {} is outside [0, {}] (this session's context length; open with a larger --ctx)",
                 path, position, s.context_length);
        const size_t max_blocks = c.hidden ? s.block_residuals.size() / c.hidden : 0;
        if (blocks < 0 || static_cast<size_t>(blocks) > max_blocks)
            fail(WASTE_ERR_FORMAT, "state file {}: n_block_residuals {} is outside [0, {}] for this model", path, blocks,
                 max_blocks);
        uint64_t expected = session_file_header_bytes;
        for_each_state_field(c, s, static_cast<uint32_t>(position), static_cast<uint32_t>(blocks),
                             [&](const StateSpan<float>& span) {
                                 if (span.field == StateField::latent || span.field == StateField::kv)
                                     expected += sizeof(int32_t);
                                 expected += sizeof(float) * static_cast<uint64_t>(span.floats);
                             });
        if (file_bytes != expected)
            fail(WASTE_ERR_CORRUPT, "state file {}: {} bytes, but a state of {} tokens of this model is {} bytes ({})", path,
                 file_bytes, position, expected, file_bytes < expected ? "truncated" : "trailing bytes");

        for_each_state_field(c, s, static_cast<uint32_t>(position), static_cast<uint32_t>(blocks),
                             [&](const StateSpan<float>& span) {
            const std::string where = span.layer >= 0
                                          ? fmt::format("{} of layer {}", state_field_name(span.field), span.layer)
                                          : std::string(state_field_name(span.field));
            if (span.field == StateField::latent || span.field == StateField::kv) {
                int32_t n_kv = 0;
                if (!file.read(reinterpret_cast<char*>(&n_kv), sizeof n_kv))
                    fail(WASTE_ERR_IO, "state file {}: short read at n_kv of layer {}", path, span.layer);
                if (n_kv != position)
                    fail(WASTE_ERR_CORRUPT, "state file {}: layer {} ({}) has n_kv {}, must equal pos {}", path, span.layer,
                         span.field == StateField::kv ? "GQA" : "MLA", n_kv, position);
                s.layers[span.layer].n_kv = static_cast<uint32_t>(n_kv);
            }
            if (!file.read(reinterpret_cast<char*>(span.data), static_cast<std::streamsize>(sizeof(float) * span.floats)))
                fail(WASTE_ERR_IO, "state file {}: short read in {}", path, where);
            for (size_t i = 0; i < span.floats; ++i)
                if (!std::isfinite(span.data[i]))
                    fail(WASTE_ERR_CORRUPT, "state file {}: {} holds a non-finite value at element {}", path, where, i);
        });
        s.n_blocks = static_cast<uint32_t>(blocks);
        s.position = static_cast<uint32_t>(position);
    } catch (...) {
        s.reset();
        throw;
    }
}

}  // namespace waste::model
