#include "convert/converter.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <numeric>
#include <set>

#include <fmt/format.h>

#include "convert/checkpoint.h"
#include "convert/kimi_layout.h"
#include "convert/tokenizer_files.h"
#include "convert/vision_layout.h"
#include "convert/vq_fit.h"
#include "format/container_writer.h"
#include "format/expert_record.h"
#include "format/trunk_codec.h"
#include "platform/aligned_buffer.h"
#include "platform/crc32.h"
#include "platform/error.h"
#include "platform/output_file.h"
#include "platform/direct_file.h"
#include "platform/thread_pool.h"
#include "platform/utf8_path.h"
#include "synth/synth_random.h"

namespace waste::convert {
namespace {

namespace fs = std::filesystem;
using ordered_json = nlohmann::ordered_json;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr int ledger_version = 1;
constexpr const char* work_dir_name = ".waste-convert";
constexpr uint64_t trunk_block_bytes = uint64_t{8} << 20;  // f32 rows read and quantised at a time
constexpr uint32_t trunk_group = 128;                        // Q*G group of a default conversion (container-v0 §3)
constexpr size_t part_buffer_bytes = size_t{4} << 20;

format::ExpertQuant resolve_quant(const ConvertOptions& o) {
    std::string name = o.quant;
    if (name == "VQ3R" && o.stages == 2) name = "VQ2R";  // --stages 2 alone asks for the 2-stage format
    format::ExpertQuant q = format::standard_expert_quant(name);
    if (o.stages != 0) q.stages = o.stages;
    if (o.entries != 0) q.entries = o.entries;
    if (q.stages < 1 || q.stages > 8) fail(WASTE_ERR_INVALID_ARGUMENT, "convert: --stages {} is not in 1..8", q.stages);
    if (q.fmt == format::ExpertFormat::vq4p && (q.stages != 4 || q.entries != 64))
        fail(WASTE_ERR_INVALID_ARGUMENT, "convert: VQ4P is 4 stages of 64 entries, got {} of {}", q.stages, q.entries);
    if (q.fmt == format::ExpertFormat::vq2r && q.stages != 2)
        fail(WASTE_ERR_INVALID_ARGUMENT, "convert: VQ2R is 2 stages, got {}", q.stages);
    if (q.entries < 1 || q.entries > (1 << q.index_bits))
        fail(WASTE_ERR_INVALID_ARGUMENT, "convert: --entries {} is not in 1..{}", q.entries, 1 << q.index_bits);
    q.bits_per_weight = static_cast<double>(q.stages * q.index_bits) / q.vec_dim;
    return q;
}

// The container config: the release's config.json verbatim, or for a
// multimodal release its text_config flattened with the wrapper under _outer
// (container-v0 §2).
ordered_json container_config(const ordered_json& release) {
    if (!release.contains("text_config")) return release;
    const ordered_json& text = release["text_config"];
    if (!text.is_object()) fail(WASTE_ERR_FORMAT, "config.json: text_config is not an object");
    ordered_json flat = text;
    ordered_json outer = release;
    outer.erase("text_config");
    flat["_outer"] = std::move(outer);
    return flat;
}

// The release's generation_config.json, kept verbatim for its EOS ids
// (Container::open adds them to the config's), after the checks the engine
// makes: a JSON object whose special ids are ids or lists of ids below
// vocab_size. None when the release has none.
std::optional<std::string> read_generation_config(const std::string& source_dir, int64_t vocab) {
    if (source_dir.empty()) return std::nullopt;
    const fs::path path = platform::utf8_path(source_dir) / "generation_config.json";
    std::error_code error;
    if (!fs::exists(path, error)) return std::nullopt;
    std::string text = platform::read_small_file(platform::utf8_text(path), format::max_generation_config_bytes);
    const json parsed = json::parse(text, nullptr, false);
    if (parsed.is_discarded()) fail(WASTE_ERR_FORMAT, "generation_config.json: not JSON");
    format::parse_special_ids(parsed, "generation_config.json", vocab);
    return text;
}

uint64_t fnv1a(std::string_view text) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (unsigned char c : text) h = (h ^ c) * 0x100000001b3ull;
    return h;
}

struct UnitRecord {   // a finished unit, as the ledger holds it
    json entry;
};

class Ledger {
public:
    Ledger(fs::path work, std::string fingerprint) : path_(work / "ledger.json"), fingerprint_(std::move(fingerprint)) {}

    // Loads a ledger of the same conversion; false if there is none or it is another's.
    bool load() {
        std::error_code error;
        if (!fs::exists(path_, error)) return false;
        const json parsed = json::parse(platform::read_small_file(platform::utf8_text(path_), uint64_t{256} << 20), nullptr, false);
        if (parsed.is_discarded() || !parsed.is_object() || parsed.value("version", 0) != ledger_version ||
            parsed.value("fingerprint", std::string()) != fingerprint_)
            return false;
        // The accessors below index "units" and "reclaimed" on a const object,
        // which must not meet a missing key: a ledger without them (edited by
        // hand, say) is not this conversion's, and the work starts over.
        const auto units = parsed.find("units");
        const auto reclaimed = parsed.find("reclaimed");
        if (units == parsed.end() || !units->is_object() || reclaimed == parsed.end() || !reclaimed->is_array())
            return false;
        for (const auto& [id, entry] : units->items())
            if (!entry.is_object()) return false;
        data_ = parsed;
        return true;
    }
    void reset() {
        data_ = json{{"version", ledger_version}, {"fingerprint", fingerprint_}, {"units", json::object()},
                     {"reclaimed", json::array()}, {"complete", false}};
    }
    bool has_unit(const std::string& id) const { return data_.at("units").contains(id); }
    const json& unit(const std::string& id) const { return data_.at("units").at(id); }
    void add_unit(const std::string& id, json entry) {
        data_["units"][id] = std::move(entry);
        save();
    }
    bool reclaimed(const std::string& shard) const {
        for (const json& s : data_.at("reclaimed"))
            if (s == shard) return true;
        return false;
    }
    void add_reclaimed(const std::string& shard) {
        data_["reclaimed"].push_back(shard);
        save();
    }
    bool complete() const { return data_.value("complete", false); }
    void set_complete(json summary) {
        data_["complete"] = true;
        data_["summary"] = std::move(summary);
        save();
    }
    const json& data() const { return data_; }

private:
    void save() {
        platform::write_small_file(platform::utf8_text(path_), data_.dump(1) + "\n");
        platform::sync_directory(platform::utf8_text(path_.parent_path()));
    }
    fs::path path_;
    std::string fingerprint_;
    json data_;
};

fs::path reclaimed_header_name(const std::string& shard) { return platform::utf8_path("reclaimed-" + shard + ".header"); }
fs::path reclaimed_kept_name(const std::string& shard) { return platform::utf8_path("reclaimed-" + shard + ".kept.json"); }

// A reclaimed shard's tensors of at most this many bytes keep their values
// (an INT4 weight's `_shape` is 8 or 16 bytes; indexing reads it).
constexpr uint64_t kept_tensor_bytes = 64;

std::string to_hex(const std::string& bytes) {
    static const char digits[] = "0123456789abcdef";
    std::string out;
    for (unsigned char c : bytes) out += {digits[c >> 4], digits[c & 15]};
    return out;
}

// to_hex's inverse; false unless `hex` is an even count of lowercase digits.
bool from_hex(const std::string& hex, std::string* bytes) {
    if (hex.size() % 2 || hex.find_first_not_of("0123456789abcdef") != std::string::npos) return false;
    const auto value = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
    bytes->clear();
    for (size_t i = 0; i < hex.size(); i += 2) bytes->push_back(static_cast<char>(value(hex[i]) << 4 | value(hex[i + 1])));
    return true;
}

// Saves a shard's safetensors header (and its file size) into the work folder
// before --reclaim deletes the shard, so a resumed run still knows the names,
// dtypes and shapes of what it held (the fingerprint and the plan's shape
// checks need them), and the values of its tiny tensors: an INT4 weight's
// `_shape` is read whenever the checkpoint is indexed. No other value is
// needed again.
void record_shard_header(const fs::path& shard_path, const fs::path& work, const std::string& shard) {
    const platform::DirectFile file(platform::utf8_text(shard_path), false);
    const uint64_t size = file.size();
    unsigned char length_bytes[8];
    if (size < 8) fail(WASTE_ERR_IO, "reclaim: {}: cannot read its header length", platform::utf8_text(shard_path));
    file.read_at(0, length_bytes);
    uint64_t length = 0;
    for (int i = 7; i >= 0; --i) length = (length << 8) | length_bytes[i];
    if (length > max_header_bytes || length > size - 8)
        fail(WASTE_ERR_FORMAT, "reclaim: {}: header length {} is out of bounds", platform::utf8_text(shard_path), length);
    std::string header(static_cast<size_t>(length), '\0');
    file.read_at(8, {reinterpret_cast<uint8_t*>(header.data()), header.size()});
    json kept = json::object();
    const SafetensorsHeader parsed = parse_safetensors_header(header, size, platform::utf8_text(shard_path));
    for (const TensorEntry& t : parsed.tensors) {
        if (t.bytes == 0 || t.bytes > kept_tensor_bytes) continue;
        std::string bytes(static_cast<size_t>(t.bytes), '\0');
        file.read_at(t.begin, {reinterpret_cast<uint8_t*>(bytes.data()), bytes.size()});
        kept[t.name] = to_hex(bytes);
    }
    platform::write_small_file(platform::utf8_text(work / reclaimed_kept_name(shard)), kept.dump() + "\n");
    platform::write_small_file(platform::utf8_text(work / reclaimed_header_name(shard)), std::to_string(size) + "\n" + header);
}

bool is_container_file(const std::string& name) {
    for (const char* known : {"manifest.json", "trunk.bin", "codebooks.bin", "tokenizer.model", "specials.json",
                              "tokenizer.json", "chat.json", "chat_template.jinja", "chat_tokens.json", "vision.json",
                              "generation_config.json",
                              "usage.waste"})
        if (name == known) return true;
    if (!name.starts_with("experts-L") || !name.ends_with(".bin")) return false;
    const std::string digits = name.substr(9, name.size() - 13);
    return !digits.empty() && digits.find_first_not_of("0123456789") == std::string::npos;
}

// Removes the manifest (un-committing the container) and then every container
// file and leftover .tmp; other files in the directory are left alone.
void clear_container(const fs::path& out, bool keep_banks) {
    std::error_code error;
    if (fs::exists(out / "manifest.json", error)) {
        fs::remove(out / "manifest.json", error);
        if (error) fail(WASTE_ERR_IO, "cannot remove {}: {}", platform::utf8_text(out / "manifest.json"), error.message());
        platform::sync_directory(platform::utf8_text(out));
    }
    for (const fs::directory_entry& entry : fs::directory_iterator(out, error)) {
        std::string name = platform::utf8_text(entry.path().filename());
        const bool tmp = name.ends_with(".tmp");
        if (tmp) name.resize(name.size() - 4);
        if (!is_container_file(name)) continue;
        if (keep_banks && !tmp && name.starts_with("experts-L")) continue;
        fs::remove(entry.path(), error);
    }
}

// The format a trunk tensor is stored in under these options (format::converter_trunk_format).
format::TrunkFormat trunk_format(const ConvertOptions& options, const TrunkItem& item) {
    return format::converter_trunk_format(item.name, item.shape, options.quantize_small_matrices, options.trunk_matrices);
}

// A unit's trunk tensors, written to a part file: payload then scales per
// tensor, back to back (the same bytes trunk.bin will hold).
json write_trunk_part(const WeightSource& source, const ConvertUnit& unit, const ConvertOptions& options,
                      const fs::path& part_path, const std::function<void(uint64_t)>& advance) {
    platform::OutputFileOptions file_options;
    file_options.buffer_bytes = part_buffer_bytes;
    file_options.buffers = 2;
    file_options.want_direct = false;
    platform::OutputFile part(platform::utf8_text(part_path), file_options);
    json entries = json::array();
    std::vector<float> values;
    for (const TrunkItem& item : unit.trunk) {
        const format::TrunkFormat fmt = trunk_format(options, item);
        format::TrunkTensor t;
        t.name = item.name;
        t.fmt = fmt;
        t.shape = item.shape;
        t.group = trunk_group;
        t.offset = part.size();
        t.bytes = format::trunk_tensor_bytes(fmt, item.shape, trunk_group);
        format::derive_trunk_layout(t, "convert: " + item.name);
        t.scale_offset = t.offset + t.payload_bytes;
        const uint64_t rows_per_block = std::max<uint64_t>(1, trunk_block_bytes / (t.cols * 4));
        std::vector<uint8_t> scales;
        uint32_t crc = 0;
        for (uint64_t row = 0; row < t.rows; row += rows_per_block) {
            const uint64_t rows = std::min(rows_per_block, t.rows - row);
            values.resize(rows * t.cols);
            read_stored_rows(source, item.name, t.cols, row, rows, values);
            for (size_t i = 0; i < values.size(); ++i)
                if (!std::isfinite(values[i]))
                    fail(WASTE_ERR_FORMAT, "checkpoint: tensor {} has a non-finite value at row {}, column {}",
                         item.name, row + i / t.cols, i % t.cols);
            const std::vector<uint8_t> encoded = format::quantize_tensor(fmt, trunk_group, rows, t.cols, values, options.trunk_scales);
            const uint64_t payload = rows * t.row_stride;
            for (size_t i = payload; i + 1 < encoded.size(); i += 2)
                if ((encoded[i + 1] & 0x7C) == 0x7C)
                    fail(WASTE_ERR_FORMAT, "checkpoint: tensor {}: a group absmax near row {} is beyond f16's range",
                         item.name, row + (i - payload) / 2 / std::max<uint64_t>(1, t.groups_per_row));
            part.write({encoded.data(), payload});
            crc = platform::crc32(encoded.data(), payload, crc);
            scales.insert(scales.end(), encoded.begin() + static_cast<ptrdiff_t>(payload), encoded.end());
            advance(payload + (encoded.size() - payload));
        }
        part.write(scales);
        // Not for an empty vector: libdeflate_crc32 with a NULL buffer returns the initial value, not crc.
        if (!scales.empty()) crc = platform::crc32(scales.data(), scales.size(), crc);
        WASTE_CHECK(part.size() == t.offset + t.bytes);
        json entry = {{"name", t.name}, {"fmt", static_cast<int>(fmt)}, {"off", t.offset}, {"shape", t.shape},
                      {"bytes", t.bytes}, {"crc32", crc}};
        if (fmt != format::TrunkFormat::f32) {
            entry["group"] = t.group;
            entry["scale_off"] = t.scale_offset;
        }
        entries.push_back(std::move(entry));
    }
    part.commit();
    // Verify: the bytes on disk are the bytes encoded.
    const platform::DirectFile back(platform::utf8_text(part_path), false);  // buffered: just written, likely cached
    std::vector<uint8_t> buffer;
    for (const json& entry : entries) {
        const uint64_t bytes = entry["bytes"].get<uint64_t>();
        uint32_t crc = 0;
        for (uint64_t done = 0; done < bytes;) {
            const uint64_t n = std::min<uint64_t>(bytes - done, trunk_block_bytes);
            buffer.resize(n);
            back.read_at(entry["off"].get<uint64_t>() + done, buffer);
            crc = platform::crc32(buffer.data(), n, crc);
            done += n;
        }
        if (crc != entry["crc32"].get<uint32_t>())
            fail(WASTE_ERR_IO, "{}: tensor {} read back differently from what was written (CRC-32 {:08x}, wrote {:08x})",
                 platform::utf8_text(part_path), entry["name"].get<std::string>(), crc, entry["crc32"].get<uint32_t>());
    }
    return json{{"part", platform::utf8_text(part_path.filename())}, {"bytes", part.size()}, {"trunk", std::move(entries)}};
}

// The matrices of expert e: gate, up, down as [rows][cols] f32.
struct ExpertWeights {
    std::array<std::vector<float>, 3> m;
};

void read_expert(const WeightSource& source, const ConvertUnit& unit, const format::ExpertLayout& layout, int e,
                 ExpertWeights& w) {
    const format::VqMatrixShape* shapes[3] = {&layout.gate, &layout.up, &layout.down};
    for (int k = 0; k < 3; ++k) {
        w.m[static_cast<size_t>(k)].resize(static_cast<size_t>(shapes[k]->rows) * shapes[k]->cols);
        source.read_rows(unit.experts[static_cast<size_t>(e)][static_cast<size_t>(k)], 0, shapes[k]->rows,
                         w.m[static_cast<size_t>(k)]);
    }
}

// The training vectors of one layer, per kind: a seeded sample of experts,
// and of each a seeded sample of its normalised row vectors.
std::array<std::vector<float>, 3> sample_training_vectors(const WeightSource& source, const ConvertUnit& unit,
                                                          const format::ExpertLayout& layout,
                                                          const ConvertOptions& options, int experts) {
    synth::Random random(synth::stream_seed(options.seed, "sample experts", static_cast<uint64_t>(unit.layer)));
    std::vector<int> ids(static_cast<size_t>(experts));
    std::iota(ids.begin(), ids.end(), 0);
    const int take = std::min(experts, std::max(1, options.sample_experts));
    for (int i = 0; i < take; ++i)
        std::swap(ids[static_cast<size_t>(i)], ids[static_cast<size_t>(i) + random.next() % static_cast<uint64_t>(experts - i)]);
    ids.resize(static_cast<size_t>(take));
    std::sort(ids.begin(), ids.end());

    const format::VqMatrixShape* shapes[3] = {&layout.gate, &layout.up, &layout.down};
    std::array<std::vector<float>, 3> out;
    ExpertWeights w;
    std::vector<float> normalised;
    for (size_t n = 0; n < ids.size(); ++n) {
        read_expert(source, unit, layout, ids[n], w);
        for (int k = 0; k < 3; ++k) {
            const uint32_t rows = shapes[k]->rows, cols = shapes[k]->cols;
            normalised.resize(static_cast<size_t>(rows) * cols);
            for (uint32_t r = 0; r < rows; ++r)
                normalise_row(&w.m[static_cast<size_t>(k)][static_cast<size_t>(r) * cols], cols, &normalised[static_cast<size_t>(r) * cols]);
            const uint64_t vectors = static_cast<uint64_t>(rows) * cols / vq_dim;
            const uint64_t quota = std::min<uint64_t>(vectors, std::max<uint64_t>(1, options.train_vectors / ids.size()));
            // A seeded subset of the vectors (partial Fisher-Yates over their indices).
            std::vector<uint32_t> order(vectors);
            std::iota(order.begin(), order.end(), 0u);
            synth::Random pick(synth::stream_seed(options.seed, "sample vectors",
                                                  static_cast<uint64_t>(unit.layer) * 3 + static_cast<uint64_t>(k),
                                                  static_cast<uint64_t>(ids[n])));
            for (uint64_t i = 0; i < quota; ++i)
                std::swap(order[i], order[i + pick.next() % (vectors - i)]);
            std::sort(order.begin(), order.begin() + static_cast<ptrdiff_t>(quota));
            std::vector<float>& dst = out[static_cast<size_t>(k)];
            for (uint64_t i = 0; i < quota; ++i)
                dst.insert(dst.end(), normalised.begin() + static_cast<ptrdiff_t>(order[i]) * vq_dim,
                           normalised.begin() + static_cast<ptrdiff_t>(order[i] + 1) * vq_dim);
        }
    }
    return out;
}

void seal_expert_record(uint8_t* record, const format::ExpertLayout& l, int layer, int expert, uint32_t codebook_base) {
    std::memset(record + l.payload_end, 0, l.record_bytes - l.payload_end);
    format::ExpertRecordHeader h;
    h.magic = format::expert_record_magic;
    h.layer = static_cast<uint16_t>(layer);
    h.expert = static_cast<uint16_t>(expert);
    h.fmt = l.record_fmt;
    h.codebook_id = static_cast<uint16_t>(codebook_base);
    h.blocks = static_cast<uint32_t>(l.record_bytes / format::direct_io_block);
    h.gate_off = l.gate_off;
    h.up_off = l.up_off;
    h.down_off = l.down_off;
    h.scales_off = l.scales_off;
    h.crc32 = platform::crc32(record + format::expert_header_bytes, l.payload_end - format::expert_header_bytes);
    format::encode_expert_header(h, record);
}

double relative(const MatrixError& e) { return e.weight2 > 0 ? std::sqrt(e.error2 / e.weight2) : 0.0; }

struct Job {
    const WeightSource& source;
    const ConvertPlan& plan;
    const format::ExpertQuant& quant;
    const format::ExpertLayout& layout;
    const ConvertOptions& options;
    fs::path out, work;
    platform::ThreadPool& pool;
    uint64_t total = 0, done = 0;

    void advance(uint64_t bytes) {
        done += bytes;
        if (options.progress && !options.progress(done, total))
            fail(WASTE_ERR_CANCELLED, "convert cancelled after {} of {} bytes", done, total);
    }

    uint32_t codebook_base(int layer) const {
        return static_cast<uint32_t>(plan.model.moe_ordinal(layer) * 3 * quant.stages);
    }

    // Codebooks and bank of one MoE layer; returns its ledger fields.
    json convert_layer_experts(const ConvertUnit& unit) {
        const auto started = Clock::now();
        const int layer = unit.layer, experts = plan.model.experts;
        std::array<std::vector<float>, 3> training = sample_training_vectors(source, unit, layout, options, experts);
        std::array<StageBooks, 3> books;
        KmeansOptions kmeans_options;
        kmeans_options.iterations = options.iterations;
        for (int k = 0; k < 3; ++k) {
            kmeans_options.seed = synth::stream_seed(options.seed, "codebook", static_cast<uint64_t>(layer), static_cast<uint64_t>(k));
            books[static_cast<size_t>(k)] =
                fit_residual_books(std::move(training[static_cast<size_t>(k)]), quant.stages, quant.entries, kmeans_options, pool);
        }
        const double fit_seconds = std::chrono::duration<double>(Clock::now() - started).count();
        // Codebook records of this layer, ids base + kind*S + stage.
        const uint32_t base = codebook_base(layer);
        std::string records;
        for (int k = 0; k < 3; ++k)
            for (int s = 0; s < quant.stages; ++s) {
                const uint32_t id = base + static_cast<uint32_t>(k * quant.stages + s);
                uint8_t header[16] = {};
                const uint32_t magic = format::codebook_magic, entries = static_cast<uint32_t>(quant.entries);
                const uint16_t id16 = static_cast<uint16_t>(id & 0xFFFF);
                std::memcpy(header, &magic, 4);
                std::memcpy(header + 4, &id16, 2);
                header[6] = 4;  // what writers put (container-v0 §4)
                header[7] = static_cast<uint8_t>(quant.vec_dim);
                std::memcpy(header + 8, &entries, 4);
                records.append(reinterpret_cast<const char*>(header), 16);
                const std::vector<uint16_t>& c = books[static_cast<size_t>(k)].f16[static_cast<size_t>(s)];
                records.append(reinterpret_cast<const char*>(c.data()), c.size() * 2);
            }
        const std::string books_part = fmt::format("codebooks-L{}.part", layer);
        platform::write_small_file(platform::utf8_text(work / books_part), records);
        advance(records.size());

        // The bank, one expert in memory at a time.
        const std::string bank_name = fmt::format("experts-L{}.bin", layer);
        platform::OutputFileOptions file_options;
        file_options.buffer_bytes = std::max<size_t>(size_t{4} << 20, (layout.record_bytes + 4095) / 4096 * 4096);
        platform::OutputFile bank(platform::utf8_text(out / bank_name), file_options);
        platform::AlignedBuffer record(layout.record_bytes);
        ExpertWeights w;
        std::array<MatrixError, 3> errors;
        const format::VqMatrixShape* shapes[3] = {&layout.gate, &layout.up, &layout.down};
        const uint32_t offsets[3] = {layout.gate_off, layout.up_off, layout.down_off};
        const char* kind_names[3] = {"gate", "up", "down"};
        for (int e = 0; e < experts; ++e) {
            read_expert(source, unit, layout, e, w);
            uint8_t* r = record.data();
            uint32_t scale_row = 0;
            for (int k = 0; k < 3; ++k) {
                const std::string what = fmt::format("expert {} of layer {} ({}, {})", e, layer, kind_names[k],
                                                     unit.experts[static_cast<size_t>(e)][static_cast<size_t>(k)]);
                auto* scales = reinterpret_cast<uint16_t*>(r + layout.scales_off) + scale_row;
                const MatrixError err = encode_matrix(w.m[static_cast<size_t>(k)].data(), shapes[k]->rows, shapes[k]->cols,
                                                      books[static_cast<size_t>(k)], quant, r + offsets[k], scales, pool,
                                                      what.c_str());
                errors[static_cast<size_t>(k)].error2 += err.error2;
                errors[static_cast<size_t>(k)].weight2 += err.weight2;
                scale_row += shapes[k]->rows;
            }
            seal_expert_record(r, layout, layer, e, base);
            bank.write(record.span());
            advance(layout.record_bytes);
        }
        bank.commit();
        // Verify what is on disk: every record's checks and CRC.
        {
            const platform::DirectFile back(platform::utf8_text(out / bank_name), false);
            format::ExpertBank b;
            b.layer = layer;
            b.file = bank_name;
            b.experts = static_cast<uint32_t>(experts);
            b.codebook_base = base;
            b.record_bytes = layout.record_bytes;
            b.bytes = layout.record_bytes * static_cast<uint64_t>(experts);
            const uint64_t books_needed = base + 3ull * quant.stages;
            for (int e = 0; e < experts; ++e) {
                back.read_at(static_cast<uint64_t>(e) * layout.record_bytes, record.span());
                format::check_expert_record(record.span(), layer, e, b, quant, layout, books_needed);
                format::verify_expert_checksum(record.span(), layer, e, layout);
            }
        }
        MatrixError all;
        for (const MatrixError& e : errors) {
            all.error2 += e.error2;
            all.weight2 += e.weight2;
        }
        const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
        return json{{"bank", bank_name},
                    {"codebooks", books_part},
                    {"codebook_base", base},
                    {"experts", experts},
                    {"error", relative(all)},
                    {"error_gate", relative(errors[0])},
                    {"error_up", relative(errors[1])},
                    {"error_down", relative(errors[2])},
                    {"fit_seconds", fit_seconds},
                    {"seconds", seconds},
                    {"seconds_per_expert", (seconds - fit_seconds) / experts}};
    }
};

}  // namespace

namespace {

// Shards that hold only tensors of finished units (and nothing the plan
// skips), not yet reclaimed.
std::vector<std::string> reclaimable_shards(const WeightSource& source, const ConvertPlan& plan, const Ledger& ledger) {
    std::map<std::string, std::string> unit_of;  // tensor -> unit id
    for (const ConvertUnit& u : plan.units) {
        for (const TrunkItem& t : u.trunk) unit_of[t.name] = u.id;
        for (const auto& names : u.experts)
            for (const std::string& n : names) unit_of[n] = u.id;
    }
    std::map<std::string, bool> done;  // shard -> every tensor finished
    for (const std::string& shard : source.shards()) done[shard] = true;
    for (const std::string& name : source.names()) {
        const auto it = unit_of.find(name);
        const bool finished = it != unit_of.end() && ledger.has_unit(it->second);
        for (const std::string& shard : source.info(name).shards)
            if (!finished) done[shard] = false;
    }
    std::vector<std::string> out;
    for (const auto& [shard, finished] : done)
        if (finished && !ledger.reclaimed(shard)) out.push_back(shard);
    return out;
}

}  // namespace

CheckpointOpenOptions recorded_reclaimed_shards(const std::string& out_dir) {
    CheckpointOpenOptions options;
    const fs::path work = platform::utf8_path(out_dir) / work_dir_name, ledger_path = work / "ledger.json";
    std::error_code error;
    if (!fs::exists(ledger_path, error)) return options;
    const json ledger = json::parse(platform::read_small_file(platform::utf8_text(ledger_path), uint64_t{256} << 20), nullptr, false);
    // Not a ledger of ours: convert_source starts clean and reclaims nothing from it.
    if (ledger.is_discarded() || !ledger.is_object() || !ledger.contains("reclaimed") || !ledger["reclaimed"].is_array())
        return options;
    for (const json& entry : ledger["reclaimed"]) {
        const std::string shard = entry.is_string() ? entry.get<std::string>() : std::string();
        if (shard.empty() || shard.find('/') != std::string::npos || shard == "." || shard == "..")
            fail(WASTE_ERR_FORMAT, "{}: \"reclaimed\" holds {}, not a shard file name", platform::utf8_text(ledger_path),
                 entry.dump().substr(0, 80));
        const fs::path header_path = work / reclaimed_header_name(shard);
        if (!fs::exists(header_path, error))
            fail(WASTE_ERR_IO, "{}: shard {} is recorded as reclaimed but its saved header {} is missing",
                 platform::utf8_text(ledger_path), shard, platform::utf8_text(header_path));
        const std::string text = platform::read_small_file(platform::utf8_text(header_path), max_header_bytes + 32);
        const size_t newline = text.find('\n');
        ReclaimedShard recorded;
        const std::string size_text = text.substr(0, newline);
        if (newline == std::string::npos || size_text.empty() || size_text.size() > 19 ||
            size_text.find_first_not_of("0123456789") != std::string::npos)
            fail(WASTE_ERR_FORMAT, "{}: not a recorded shard header (no file size line)", platform::utf8_text(header_path));
        recorded.file_bytes = std::stoull(size_text);
        recorded.header_json = text.substr(newline + 1);
        // the kept tiny tensors (absent in a work folder of an older engine)
        const fs::path kept_path = work / reclaimed_kept_name(shard);
        if (fs::exists(kept_path, error)) {
            const json kept = json::parse(platform::read_small_file(platform::utf8_text(kept_path), uint64_t{16} << 20), nullptr, false);
            if (kept.is_discarded() || !kept.is_object())
                fail(WASTE_ERR_FORMAT, "{}: not a JSON object of kept tensors", platform::utf8_text(kept_path));
            for (const auto& [name, hex] : kept.items()) {
                std::string bytes;
                if (!hex.is_string() || hex.get_ref<const std::string&>().size() > 2 * kept_tensor_bytes ||
                    !from_hex(hex.get<std::string>(), &bytes))
                    fail(WASTE_ERR_FORMAT, "{}: tensor \"{}\" is not up to {} bytes of lowercase hex", platform::utf8_text(kept_path),
                         name, kept_tensor_bytes);
                recorded.kept.emplace(name, std::move(bytes));
            }
        }
        options.reclaimed.emplace(shard, std::move(recorded));
    }
    return options;
}

namespace {

// The tower joins the plan as one more unit; its tensors leave the skipped
// list, and a tower or projector tensor it does not know (a bias, another
// block) is refused rather than dropped: the tower would run without it.
void add_vision_unit(ConvertPlan& plan, const VisionPlan& vision) {
    if (!vision.present) return;
    std::set<std::string> used;
    for (const TrunkItem& item : vision.unit.trunk) used.insert(item.name);
    std::vector<std::string> skipped;
    for (const std::string& name : plan.skipped) {
        if (used.count(name)) continue;
        if (name.starts_with("vision_tower.") || name.starts_with("mm_projector."))
            fail(WASTE_ERR_FORMAT, "checkpoint: tensor {} is not part of the vision tower vision_config describes", name);
        skipped.push_back(name);
    }
    plan.skipped = std::move(skipped);
    plan.units.push_back(vision.unit);
}

}  // namespace

namespace {

// The conversion; `given` holds the tokenizer files and generation config
// when the source is not a release directory (a GGUF), else they are read
// from source_dir.
json convert_any(const WeightSource& source, const ordered_json& release_config, const std::string& source_dir,
                 const ReleaseFiles* given, const std::string& out_dir, const ConvertOptions& options) {
    const auto started = Clock::now();
    // ---- everything is read and checked before a byte is written.
    const ordered_json config = container_config(release_config);
    ConvertPlan plan = plan_kimi_conversion(json::parse(config.dump()), source);
    const format::ModelConfig& model = plan.model;
    const VisionPlan vision = plan_vision_conversion(release_config, model.hidden, source, source_dir);
    add_vision_unit(plan, vision);
    const bool has_moe = model.has_moe();
    const format::ExpertQuant quant = resolve_quant(options);
    // Every row of an expert matrix is whole VQ vectors (container-v0 §5).
    if (has_moe)
        for (auto [key, value] : {std::pair{"moe_intermediate_size", model.moe_intermediate},
                                  std::pair{model.latent > 0 ? "routed_expert_hidden_size" : "hidden_size",
                                            model.expert_input()}})
            if (value % quant.vec_dim != 0)
                fail(WASTE_ERR_UNSUPPORTED, "config.json: {} {} is not a multiple of the {}-value VQ vectors", key,
                     value, quant.vec_dim);
    const format::ExpertLayout layout = has_moe ? format::expert_layout(model, quant) : format::ExpertLayout{};
    const TokenizerFiles tokenizer = given             ? given->tokenizer
                                     : source_dir.empty() ? TokenizerFiles{}
                                                          : read_tokenizer_files(source_dir, model.vocab);
    const std::optional<std::string> generation_config =
        given ? given->generation_config : read_generation_config(source_dir, model.vocab);

    json fingerprint = {{"config", config.dump()},
                        {"quant", format::expert_quant_json(quant)},
                        {"seed", options.seed},
                        {"sample_experts", options.sample_experts},
                        {"train_vectors", options.train_vectors},
                        {"iterations", options.iterations},
                        {"quantize_small_matrices", options.quantize_small_matrices},
                        {"trunk_matrices", options.trunk_matrices == format::TrunkFormat::q8g ? "q8" : "q4"},
                        {"trunk_scales", options.trunk_scales == format::TrunkScales::fitted ? "fitted" : "absmax"}};
    json tensors = json::array();
    for (const ConvertUnit& u : plan.units) {
        for (const TrunkItem& t : u.trunk) tensors.push_back({t.name, source.info(t.name).storage});
        if (!u.experts.empty())
            tensors.push_back({u.experts.front()[0], source.info(u.experts.front()[0]).storage, u.experts.size()});
    }
    fingerprint["tensors"] = std::move(tensors);
    for (const auto* file : {&tokenizer.rank_file, &tokenizer.specials_json, &tokenizer.chat_json, &tokenizer.chat_template})
        fingerprint["tokenizer"].push_back(*file ? fnv1a(**file) : 0);
    // Only when there is one, so that the fingerprints of conversions without
    // it (every one before tokenizer.json was stored) stay what they were.
    if (tokenizer.tokenizer_json) fingerprint["tokenizer"].push_back(fnv1a(*tokenizer.tokenizer_json));
    if (tokenizer.chat_tokens_json) fingerprint["chat_tokens"] = fnv1a(*tokenizer.chat_tokens_json);  // likewise
    if (generation_config) fingerprint["generation_config"] = fnv1a(*generation_config);  // likewise
    if (vision.present) fingerprint["vision"] = vision.vision_json.dump();  // likewise only with a tower
    const std::string fingerprint_text = fmt::format("{:016x}", fnv1a(fingerprint.dump()));

    const fs::path out = platform::utf8_path(out_dir), work = out / work_dir_name;
    std::error_code error;
    fs::create_directories(work, error);
    if (error) fail(WASTE_ERR_IO, "cannot create {}: {}", platform::utf8_text(work), error.message());
    Ledger ledger(work, fingerprint_text);
    bool resuming = ledger.load();
    if (resuming && ledger.complete()) {
        if (fs::exists(out / "manifest.json", error)) {
            json summary = ledger.data()["summary"];
            summary["already_complete"] = true;
            return summary;
        }
        resuming = false;  // its parts are gone: convert again
    }
    // Everything still to convert must be readable: a shard reclaimed by an
    // earlier run holds only units that run's ledger lists as done, so needing
    // one means the ledger does not match OUT (or belongs to another
    // conversion). Refused before anything is cleared or written.
    for (const ConvertUnit& u : plan.units) {
        if (resuming && ledger.has_unit(u.id)) continue;
        std::vector<const std::string*> needed;
        for (const TrunkItem& t : u.trunk) needed.push_back(&t.name);
        for (const auto& names : u.experts)
            for (const std::string& n : names) needed.push_back(&n);
        for (const std::string* name : needed)
            for (const std::string& shard : source.info(*name).shards)
                if (source.shard_reclaimed(shard))
                    fail(WASTE_ERR_IO,
                         "convert: tensor {} (unit \"{}\") is still to be converted, but its shard {} was reclaimed "
                         "(deleted) by an earlier run whose ledger {} does not list that unit as done; restore the "
                         "shard or convert into a fresh directory",
                         *name, u.id, shard, platform::utf8_text(work / "ledger.json"));
    }
    if (!resuming) {
        // Another conversion's (or no) ledger: start clean.
        clear_container(out, /*keep_banks=*/false);
        for (const fs::directory_entry& entry : fs::directory_iterator(work, error)) fs::remove(entry.path(), error);
        ledger.reset();
        platform::write_small_file(platform::utf8_text(work / "ledger.json"), ledger.data().dump(1) + "\n");
    } else {
        clear_container(out, /*keep_banks=*/true);  // un-commit; finished banks stay
    }

    platform::ThreadPool pool(options.jobs);
    Job job{source, plan, quant, layout, options, out, work, pool};
    for (const ConvertUnit& u : plan.units) {
        for (const TrunkItem& t : u.trunk)
            job.total += format::trunk_tensor_bytes(trunk_format(options, t), t.shape, trunk_group);
        if (u.moe) job.total += 3ull * quant.stages * quant.codebook_record_bytes() + layout.record_bytes * model.experts;
    }

    json layers = json::array();
    int resumed_units = 0;
    std::set<std::string> reclaim_reported;  // dry: each shard is listed once
    for (size_t index = 0; index < plan.units.size(); ++index) {
        const ConvertUnit& unit = plan.units[index];
        if (ledger.has_unit(unit.id)) {
            const json& entry = ledger.unit(unit.id);
            ++resumed_units;
            uint64_t bytes = entry.at("trunk_part").at("bytes").get<uint64_t>();
            if (unit.moe) bytes += 3ull * quant.stages * quant.codebook_record_bytes() + layout.record_bytes * model.experts;
            job.advance(bytes);
            if (unit.moe) layers.push_back(entry["experts"]);
            if (options.event) options.event(json{{"unit", unit.id}, {"layer", unit.layer}, {"resumed", true}});
            continue;
        }
        const auto unit_started = Clock::now();
        json entry;
        entry["trunk_part"] = write_trunk_part(source, unit, options,
                                               work / fmt::format("trunk-{:04}.part", index),
                                               [&](uint64_t bytes) { job.advance(bytes); });
        if (unit.moe) {
            json experts = job.convert_layer_experts(unit);
            experts["layer"] = unit.layer;
            entry["experts"] = experts;
            layers.push_back(experts);
        }
        platform::sync_directory(platform::utf8_text(out));
        platform::sync_directory(platform::utf8_text(work));
        ledger.add_unit(unit.id, entry);
        json event = {{"unit", unit.id}, {"layer", unit.layer}, {"resumed", false},
                      {"seconds", std::chrono::duration<double>(Clock::now() - unit_started).count()},
                      {"done", job.done}, {"total", job.total}};
        if (unit.moe) {
            event["error"] = entry["experts"]["error"];
            event["seconds_per_expert"] = entry["experts"]["seconds_per_expert"];
        }
        if (options.event) options.event(event);

        if (options.reclaim != Reclaim::off) {
            for (const std::string& shard : reclaimable_shards(source, plan, ledger)) {
                if (!reclaim_reported.insert(shard).second) continue;
                const fs::path path = platform::utf8_path(source_dir) / platform::utf8_path(shard);
                if (options.reclaim == Reclaim::on) {
                    record_shard_header(path, work, shard);  // fsynced (tmp + rename) before the ledger names it
                    platform::sync_directory(platform::utf8_text(work));
                    ledger.add_reclaimed(shard);  // recorded before the delete
                    source.release_shard(shard);
                    fs::remove(path, error);
                    if (error) fail(WASTE_ERR_IO, "reclaim: cannot delete {}: {}", platform::utf8_text(path), error.message());
                }
                if (options.event)
                    options.event(json{{"reclaim", shard}, {"deleted", options.reclaim == Reclaim::on}});
            }
        }
    }

    // ---- assemble: trunk.bin and codebooks.bin from the parts, the small files, then the manifest.
    ordered_json trunk = ordered_json::array();
    {
        platform::OutputFileOptions file_options;
        file_options.want_direct = false;
        platform::OutputFile trunk_file(platform::utf8_text(out / "trunk.bin"), file_options);
        std::vector<uint8_t> buffer;
        for (size_t index = 0; index < plan.units.size(); ++index) {
            const json& part = ledger.unit(plan.units[index].id).at("trunk_part");
            const uint64_t base = trunk_file.size(), bytes = part.at("bytes").get<uint64_t>();
            const fs::path path = work / platform::utf8_path(part.at("part").get<std::string>());
            const platform::DirectFile back(platform::utf8_text(path), false);
            for (uint64_t done = 0; done < bytes;) {
                const uint64_t n = std::min<uint64_t>(bytes - done, trunk_block_bytes);
                buffer.resize(n);
                back.read_at(done, buffer);
                trunk_file.write(buffer);
                done += n;
            }
            for (const json& t : part.at("trunk")) {
                ordered_json entry;
                entry["name"] = t.at("name");
                entry["fmt"] = t.at("fmt");
                entry["off"] = base + t.at("off").get<uint64_t>();
                entry["shape"] = t.at("shape");
                if (t.contains("group")) {
                    entry["group"] = t.at("group");
                    entry["scale_off"] = base + t.at("scale_off").get<uint64_t>();
                }
                entry["bytes"] = t.at("bytes");
                trunk.push_back(std::move(entry));
            }
        }
        trunk_file.commit();
    }
    const uint64_t trunk_bytes = fs::file_size(out / "trunk.bin");
    uint32_t codebook_records = 0;
    ordered_json bank_index = ordered_json::object();
    if (has_moe) {
        std::string books;
        for (int layer = 0; layer < model.layers; ++layer) {
            if (!model.is_moe_layer(layer)) continue;
            const json& experts = ledger.unit(fmt::format("layer {}", layer)).at("experts");
            books += platform::read_small_file(platform::utf8_text(work / platform::utf8_path(experts.at("codebooks").get<std::string>())), uint64_t{1} << 30);
            bank_index[std::to_string(layer)] = ordered_json{{"file", experts.at("bank")},
                                                             {"experts", model.experts},
                                                             {"bytes", layout.record_bytes * model.experts},
                                                             {"codebook_base", experts["codebook_base"]}};
        }
        platform::write_small_file(platform::utf8_text(out / "codebooks.bin"), books);
        codebook_records = static_cast<uint32_t>(books.size() / quant.codebook_record_bytes());
    }
    if (tokenizer.rank_file) platform::write_small_file(platform::utf8_text(out / "tokenizer.model"), *tokenizer.rank_file);
    if (tokenizer.tokenizer_json)
        platform::write_small_file(platform::utf8_text(out / "tokenizer.json"), *tokenizer.tokenizer_json);
    if (tokenizer.specials_json) platform::write_small_file(platform::utf8_text(out / "specials.json"), *tokenizer.specials_json);
    if (tokenizer.chat_json) platform::write_small_file(platform::utf8_text(out / "chat.json"), *tokenizer.chat_json);
    if (tokenizer.chat_template) platform::write_small_file(platform::utf8_text(out / "chat_template.jinja"), *tokenizer.chat_template);
    if (tokenizer.chat_tokens_json) platform::write_small_file(platform::utf8_text(out / "chat_tokens.json"), *tokenizer.chat_tokens_json);
    if (generation_config) platform::write_small_file(platform::utf8_text(out / "generation_config.json"), *generation_config);
    if (vision.present) platform::write_small_file(platform::utf8_text(out / "vision.json"), vision.vision_json.dump(1) + "\n");

    ordered_json manifest;
    manifest["format_version"] = 0;
    manifest["arch"] = plan.arch;
    manifest["tensor_prefix"] = plan.tensor_prefix;
    manifest["config"] = config;
    if (has_moe) manifest["expert_quant"] = format::expert_quant_json(quant);
    manifest["layers"] = bank_index;
    manifest["trunk"] = trunk;
    const std::string text = manifest.dump(1) + "\n";
    try {  // the reader's own rules, before committing
        const format::Manifest check = format::parse_manifest(text);
        format::check_trunk_extents(check, trunk_bytes);
        if (!check.banks.empty()) format::check_codebook_bases(check, codebook_records);
    } catch (const Error& e) {
        fail(WASTE_ERR_INTERNAL, "convert: the container would not be readable: {}", e.what());
    }
    platform::sync_directory(platform::utf8_text(out));
    platform::write_small_file(platform::utf8_text(out / "manifest.json"), text);
    platform::sync_directory(platform::utf8_text(out));

    double error_sum = 0, seconds_per_expert_sum = 0;
    for (const json& l : layers) {
        error_sum += l["error"].get<double>();
        seconds_per_expert_sum += l["seconds_per_expert"].get<double>();
    }
    json summary = {{"out", out_dir},
                    {"arch", plan.arch},
                    {"tensor_prefix", plan.tensor_prefix},
                    {"expert_quant", format::expert_quant_json(quant)},
                    {"trunk_tensors", trunk.size()},
                    {"trunk_bytes", trunk_bytes},
                    {"layers", layers},
                    {"mean_error", layers.empty() ? 0.0 : error_sum / static_cast<double>(layers.size())},
                    {"max_error", 0.0},
                    {"mean_seconds_per_expert", layers.empty() ? 0.0 : seconds_per_expert_sum / static_cast<double>(layers.size())},
                    {"skipped", plan.skipped},
                    {"skipped_mtp_tensors", plan.skipped_mtp},
                    {"vision", vision.present},
                    {"warnings", vision.warnings},
                    {"tokenizer", tokenizer.rank_file.has_value() || tokenizer.tokenizer_json.has_value()},
                    {"chat", tokenizer.chat_source},
                    {"resumed_units", resumed_units},
                    {"reclaimed", ledger.data()["reclaimed"]},
                    {"seconds", std::chrono::duration<double>(Clock::now() - started).count()}};
    double max_error = 0;
    for (const json& l : layers) max_error = std::max(max_error, l["error"].get<double>());
    summary["max_error"] = max_error;
    ledger.set_complete(summary);
    // The parts are no longer needed once the manifest is committed.
    for (const fs::directory_entry& entry : fs::directory_iterator(work, error))
        if (entry.path().extension() == ".part") fs::remove(entry.path(), error);
    return summary;
}

}  // namespace

json convert_source(const WeightSource& source, const ordered_json& release_config, const std::string& source_dir,
                    const std::string& out_dir, const ConvertOptions& options) {
    return convert_any(source, release_config, source_dir, nullptr, out_dir, options);
}

json convert_release(const WeightSource& source, const ordered_json& release_config, const ReleaseFiles& files,
                     const std::string& out_dir, const ConvertOptions& options) {
    if (options.reclaim != Reclaim::off)
        fail(WASTE_ERR_UNSUPPORTED, "reclaim: the source is one file, not shards that can be deleted as they are done");
    return convert_any(source, release_config, "", &files, out_dir, options);
}

}  // namespace waste::convert
