#include "format/container_writer.h"

#include <cstring>
#include <filesystem>

#include "format/f16.h"
#include "format/trunk_codec.h"
#include "platform/crc32.h"
#include "platform/error.h"
#include "platform/output_file.h"
#include "platform/utf8_path.h"

namespace waste::format {
namespace {

namespace fs = std::filesystem;
using ordered_json = nlohmann::ordered_json;

constexpr uint64_t quantize_min_elements = 65536;  // converter convention, container-v0 §3
constexpr uint64_t codebook_header_bytes = 16;
constexpr uint8_t codebook_record_fmt = 4;          // what writers put in a WCBK record, container-v0 §4
constexpr size_t max_pending_banks = 128;           // open files awaiting their fsync (K3 has 92 banks)

bool ends_with(std::string_view text, std::string_view suffix) {
    return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool is_bank_file_name(std::string_view name) {
    if (!name.starts_with("experts-L") || !ends_with(name, ".bin")) return false;
    const std::string_view digits = name.substr(9, name.size() - 9 - 4);
    return !digits.empty() && digits.find_first_not_of("0123456789") == std::string_view::npos;
}

// The files a container directory may hold (container-v0 §1).
bool is_container_file_name(std::string_view name) {
    for (const char* known : {"manifest.json", "trunk.bin", "codebooks.bin", "tokenizer.model", "specials.json",
                              "tokenizer.json", "chat.json", "chat_template.jinja", "vision.json", "usage.waste"})
        if (name == known) return true;
    return is_bank_file_name(name);
}

// Removes a container's files from a directory, manifest first so that a
// crash part-way leaves no manifest pointing at a mix of old and new files.
void clear_container_files(const std::string& directory) {
    std::error_code error;
    const fs::path dir = platform::utf8_path(directory), manifest = dir / "manifest.json";
    if (fs::exists(manifest, error)) {
        if (!fs::remove(manifest, error))
            fail(WASTE_ERR_IO, "cannot remove the old {}: {}", platform::utf8_text(manifest), error.message());
        platform::sync_directory(directory);
    }
    for (const fs::directory_entry& entry : fs::directory_iterator(dir, error)) {
        std::string name = platform::utf8_text(entry.path().filename());
        const std::string base = ends_with(name, ".tmp") ? name.substr(0, name.size() - 4) : name;
        if (!is_container_file_name(base) || !entry.is_regular_file(error)) continue;
        if (!fs::remove(entry.path(), error))
            fail(WASTE_ERR_IO, "cannot remove the old {}: {}", platform::utf8_text(entry.path()), error.message());
    }
    if (error) fail(WASTE_ERR_IO, "cannot list {}: {}", directory, error.message());
}

ordered_json trunk_entry_json(const TrunkTensor& t) {
    ordered_json entry;
    entry["name"] = t.name;
    entry["fmt"] = static_cast<int>(t.fmt);
    entry["off"] = t.offset;
    entry["shape"] = t.shape;
    if (t.fmt != TrunkFormat::f32) {
        entry["group"] = t.group;
        entry["scale_off"] = t.scale_offset;
    }
    entry["bytes"] = t.bytes;
    return entry;
}

std::span<const uint8_t> as_bytes(std::span<const uint16_t> values) {
    return {reinterpret_cast<const uint8_t*>(values.data()), values.size() * 2};  // little-endian host
}

}  // namespace

ordered_json expert_quant_json(const ExpertQuant& q) {
    ordered_json entry;
    entry["fmt"] = q.fmt_name;
    entry["stages"] = q.stages;
    entry["vec_dim"] = q.vec_dim;
    entry["entries"] = q.entries;
    entry["index_block"] = q.index_block;
    if (q.index_bits != 8) entry["index_bits"] = q.index_bits;
    if (q.bits_per_weight == static_cast<double>(static_cast<int64_t>(q.bits_per_weight)))
        entry["bits_per_weight"] = static_cast<int64_t>(q.bits_per_weight);
    else
        entry["bits_per_weight"] = q.bits_per_weight;
    return entry;
}

TrunkFormat converter_trunk_format(std::string_view name, std::span<const int64_t> shape, bool quantize_small_matrices,
                                   TrunkFormat matrices) {
    WASTE_CHECK(matrices == TrunkFormat::q4g || matrices == TrunkFormat::q8g);
    uint64_t elements = 1;
    for (int64_t dim : shape) elements *= static_cast<uint64_t>(dim);
    const bool small_exempt = !(quantize_small_matrices && shape.size() == 2);
    if (shape.size() <= 1 || (elements < quantize_min_elements && small_exempt)) return TrunkFormat::f32;
    // gpt-oss's per-expert biases ([E, 2I], [E, H]) are added, never multiplied: kept exact
    if (ends_with(name, "_bias")) return TrunkFormat::f32;
    if (ends_with(name, "embed_tokens.weight") || ends_with(name, "lm_head.weight")) return TrunkFormat::q8g;
    if (name.starts_with("vision_tower.") || name.starts_with("mm_projector.")) return TrunkFormat::q8g;
    return matrices;
}

uint64_t trunk_tensor_bytes(TrunkFormat fmt, std::span<const int64_t> shape, uint32_t group) {
    if (shape.empty() || shape.size() > 4)
        fail(WASTE_ERR_INVALID_ARGUMENT, "trunk tensor of {} dims, expected 1 to 4", shape.size());
    uint64_t rows = 1;
    for (size_t i = 0; i < shape.size(); ++i) {
        if (shape[i] < 1 || shape[i] > max_trunk_dim)
            fail(WASTE_ERR_INVALID_ARGUMENT, "trunk tensor dimension {} is out of range [1, 2^26]", shape[i]);
        if (i + 1 < shape.size()) rows *= static_cast<uint64_t>(shape[i]);
    }
    if (fmt != TrunkFormat::f32 && (group < 1 || group > 65536))
        fail(WASTE_ERR_INVALID_ARGUMENT, "trunk tensor group {} is out of range [1, 65536]", group);
    // The size of one encoded row, from the codec itself: one source of truth for the layout.
    const std::vector<float> zero_row(static_cast<size_t>(shape.back()), 0.0f);
    return rows * quantize_tensor(fmt, group, 1, zero_row.size(), zero_row).size();
}

ExpertQuant standard_expert_quant(std::string_view name) {
    ExpertQuant q;
    q.fmt_name = std::string(name);
    q.vec_dim = 8;
    q.index_block = 64;
    if (name == "VQ3R") {
        q.fmt = ExpertFormat::vq3r;
        q.stages = 3;
        q.entries = 256;
        q.index_bits = 8;
    } else if (name == "VQ2R") {
        q.fmt = ExpertFormat::vq2r;
        q.stages = 2;
        q.entries = 256;
        q.index_bits = 8;
    } else if (name == "VQ4P") {
        q.fmt = ExpertFormat::vq4p;
        q.stages = 4;
        q.entries = 64;
        q.index_bits = 6;
    } else {
        fail(WASTE_ERR_INVALID_ARGUMENT, "expert quantisation \"{}\" is not VQ3R, VQ2R or VQ4P", name);
    }
    q.bits_per_weight = static_cast<double>(q.stages * q.index_bits) / q.vec_dim;
    return q;
}

ContainerWriter::ContainerWriter(std::string directory, ContainerSpec spec, ContainerWriterOptions options)
    : directory_(std::move(directory)), spec_(std::move(spec)), options_(options) {
    config_ = parse_model_config(nlohmann::json::parse(spec_.config.dump()), "writer: config");
    const bool has_moe = config_.has_moe();
    if (has_moe) {
        if (!spec_.quant)
            fail(WASTE_ERR_INVALID_ARGUMENT, "writer: {} layers are MoE but no expert quantisation was given",
                 config_.moe_layer_count());
        const int vec = spec_.quant->vec_dim;
        if (vec < 1 || config_.expert_input() % vec != 0 || config_.moe_intermediate % vec != 0)
            fail(WASTE_ERR_INVALID_ARGUMENT, "writer: vec_dim {} does not divide the expert shapes {} and {}", vec,
                 config_.expert_input(), config_.moe_intermediate);
        layout_ = format::expert_layout(config_, *spec_.quant);
    }
    std::error_code error;
    const fs::path dir = platform::utf8_path(directory_);
    fs::create_directories(dir, error);
    if (error || !fs::is_directory(dir))
        fail(WASTE_ERR_IO, "cannot create the container directory {}: {}", directory_,
             error ? error.message() : "a file of that name exists");
    clear_container_files(directory_);
    pool_ = std::make_shared<platform::BufferPool>();
}

// Abandoned before finish() (a failed write, a full disk, an exception in
// the caller): the files this writer published are removed again, so a
// failure leaves the directory as the constructor left it — no manifest,
// and no whole-looking trunk.bin or banks of an unfinished container taking
// the space. The open files go first (each removes its own .tmp).
ContainerWriter::~ContainerWriter() {
    if (finished_) return;
    trunk_file_.reset();
    codebook_file_.reset();
    bank_file_.reset();
    committing_.clear();
    try {
        clear_container_files(directory_);
    } catch (const Error&) {  // a destructor cannot report; what stays is no container (no manifest)
    }
}

std::string ContainerWriter::path(const std::string& name) const { return directory_ + "/" + name; }

void ContainerWriter::finish_commits() {
    for (const std::unique_ptr<platform::OutputFile>& file : committing_) file->finish_commit();
    committing_.clear();
}

uint64_t ContainerWriter::bytes_written() const {
    uint64_t total = small_file_bytes_ + bank_bytes_done_;
    if (trunk_file_) total += trunk_file_->size();
    if (codebook_file_) total += codebook_file_->size();
    if (bank_file_) total += bank_file_->size();
    return total;
}

void ContainerWriter::add_trunk_tensor(const std::string& name, TrunkFormat fmt, std::vector<int64_t> shape,
                                       std::span<const float> values, uint32_t group) {
    begin_trunk_tensor(name, fmt, std::move(shape), group);
    add_trunk_rows(values);
    end_trunk_tensor();
}

const TrunkTensor& ContainerWriter::begin_trunk_tensor(const std::string& name, TrunkFormat fmt,
                                                       std::vector<int64_t> shape, uint32_t group) {
    if (finished_ || open_tensor_)
        fail(WASTE_ERR_INVALID_ARGUMENT, "writer: trunk tensor {} begun while {}", name,
             finished_ ? "the container is finished" : "tensor " + open_tensor_->name + " is open");
    if (name.empty() || name.size() > 512)
        fail(WASTE_ERR_INVALID_ARGUMENT, "writer: trunk tensor name of {} characters (1 to 512)", name.size());
    if (trunk_names_.count(name)) fail(WASTE_ERR_INVALID_ARGUMENT, "writer: trunk tensor {} added twice", name);
    TrunkTensor t;
    t.name = name;
    t.fmt = fmt;
    t.shape = std::move(shape);
    t.group = fmt == TrunkFormat::f32 ? 128 : group;
    try {
        t.bytes = trunk_tensor_bytes(fmt, t.shape, t.group);
    } catch (const Error& error) {
        fail(WASTE_ERR_INVALID_ARGUMENT, "writer: trunk tensor {}: {}", name, error.what());
    }
    derive_trunk_layout(t, "writer: trunk tensor " + name);  // checks the size and fills the row layout
    if (!trunk_file_) {
        platform::OutputFileOptions file_options;
        file_options.buffer_bytes = options_.buffer_bytes;
        file_options.want_direct = options_.direct_io;
        file_options.pool = pool_;
        trunk_file_ = std::make_unique<platform::OutputFile>(path("trunk.bin"), file_options);
    }
    t.offset = trunk_file_->size();
    if (fmt != TrunkFormat::f32) t.scale_offset = t.offset + t.payload_bytes;
    open_tensor_ = std::move(t);
    open_rows_done_ = 0;
    open_scales_.clear();
    open_scales_.reserve(open_tensor_->scale_bytes);
    return *open_tensor_;
}

void ContainerWriter::add_trunk_rows(std::span<const float> values) {
    if (!open_tensor_) fail(WASTE_ERR_INVALID_ARGUMENT, "writer: trunk rows added with no tensor begun");
    const TrunkTensor& t = *open_tensor_;
    if (values.size() % t.cols != 0)
        fail(WASTE_ERR_INVALID_ARGUMENT, "writer: trunk tensor {}: {} values is not a whole number of rows of {}", t.name,
             values.size(), t.cols);
    const uint64_t rows = values.size() / t.cols;
    if (rows > t.rows - open_rows_done_)
        fail(WASTE_ERR_INVALID_ARGUMENT, "writer: trunk tensor {}: {} rows given, {} of {} remain", t.name, rows,
             t.rows - open_rows_done_, t.rows);
    const std::vector<uint8_t> encoded = quantize_tensor(t.fmt, t.group, rows, t.cols, values);
    const uint64_t payload = rows * t.row_stride;
    WASTE_CHECK(encoded.size() == payload + rows * t.groups_per_row * 2);
    trunk_file_->write({encoded.data(), payload});
    open_scales_.insert(open_scales_.end(), encoded.begin() + static_cast<ptrdiff_t>(payload), encoded.end());
    open_rows_done_ += rows;
}

void ContainerWriter::add_trunk_encoded_rows(std::span<const uint8_t> payload, std::span<const uint16_t> scales) {
    if (!open_tensor_) fail(WASTE_ERR_INVALID_ARGUMENT, "writer: trunk rows added with no tensor begun");
    const TrunkTensor& t = *open_tensor_;
    if (payload.size() % t.row_stride != 0)
        fail(WASTE_ERR_INVALID_ARGUMENT, "writer: trunk tensor {}: {} payload bytes is not a whole number of {}-byte rows",
             t.name, payload.size(), t.row_stride);
    const uint64_t rows = payload.size() / t.row_stride;
    if (rows > t.rows - open_rows_done_)
        fail(WASTE_ERR_INVALID_ARGUMENT, "writer: trunk tensor {}: {} rows given, {} of {} remain", t.name, rows,
             t.rows - open_rows_done_, t.rows);
    if (scales.size() != rows * t.groups_per_row)
        fail(WASTE_ERR_INVALID_ARGUMENT, "writer: trunk tensor {}: {} scales for {} rows of {} groups", t.name,
             scales.size(), rows, t.groups_per_row);
    for (size_t i = 0; i < scales.size(); ++i)
        if ((scales[i] & 0x7C00) == 0x7C00)
            fail(WASTE_ERR_INVALID_ARGUMENT, "writer: trunk tensor {}: scale 0x{:04x} of row {} is not finite", t.name,
                 scales[i], open_rows_done_ + i / t.groups_per_row);
    trunk_file_->write(payload);
    const std::span<const uint8_t> scale_bytes = as_bytes(scales);
    open_scales_.insert(open_scales_.end(), scale_bytes.begin(), scale_bytes.end());
    open_rows_done_ += rows;
}

void ContainerWriter::end_trunk_tensor() {
    if (!open_tensor_) fail(WASTE_ERR_INVALID_ARGUMENT, "writer: end_trunk_tensor with no tensor begun");
    const TrunkTensor& t = *open_tensor_;
    if (open_rows_done_ != t.rows)
        fail(WASTE_ERR_INVALID_ARGUMENT, "writer: trunk tensor {} ended after {} of its {} rows", t.name, open_rows_done_,
             t.rows);
    trunk_file_->write(open_scales_);
    WASTE_CHECK(trunk_file_->size() == t.offset + t.bytes);
    trunk_names_.insert(t.name);
    trunk_.push_back(std::move(*open_tensor_));
    open_tensor_.reset();
    open_scales_ = {};
}

uint32_t ContainerWriter::add_codebook(std::span<const uint16_t> centroids) {
    if (finished_) fail(WASTE_ERR_INVALID_ARGUMENT, "writer: codebook added after finish");
    if (!spec_.quant) fail(WASTE_ERR_INVALID_ARGUMENT, "writer: codebook added but the container has no expert quantisation");
    const ExpertQuant& q = *spec_.quant;
    const size_t values = static_cast<size_t>(q.entries) * q.vec_dim;
    if (centroids.size() != values)
        fail(WASTE_ERR_INVALID_ARGUMENT, "writer: codebook {} has {} values, expected {} entries x {}", codebook_count_,
             centroids.size(), q.entries, q.vec_dim);
    for (size_t i = 0; i < centroids.size(); ++i)
        if ((centroids[i] & 0x7C00) == 0x7C00)
            fail(WASTE_ERR_INVALID_ARGUMENT, "writer: codebook {}: centroid value {} (0x{:04x}) is not finite",
                 codebook_count_, i, centroids[i]);
    if (!codebook_file_) {
        platform::OutputFileOptions file_options;
        file_options.buffer_bytes = size_t{1} << 20;  // records are 4 KB; the file is a few MB even for K3
        file_options.buffers = 2;
        file_options.want_direct = options_.direct_io;
        file_options.pool = pool_;
        codebook_file_ = std::make_unique<platform::OutputFile>(path("codebooks.bin"), file_options);
    }
    uint8_t header[codebook_header_bytes] = {};
    const uint32_t magic = codebook_magic;
    const uint16_t id = static_cast<uint16_t>(codebook_count_ & 0xFFFF);
    const uint32_t entries = static_cast<uint32_t>(q.entries);
    std::memcpy(header + 0, &magic, 4);
    std::memcpy(header + 4, &id, 2);
    header[6] = codebook_record_fmt;
    header[7] = static_cast<uint8_t>(q.vec_dim);
    std::memcpy(header + 8, &entries, 4);
    codebook_file_->write(header);
    codebook_file_->write(as_bytes(centroids));
    return codebook_count_++;
}

void ContainerWriter::begin_bank(int layer, uint32_t codebook_base) {
    if (finished_ || open_bank_)
        fail(WASTE_ERR_INVALID_ARGUMENT, "writer: bank of layer {} begun while {}", layer,
             finished_ ? "the container is finished" : "another bank is open");
    if (!config_.is_moe_layer(layer))
        fail(WASTE_ERR_INVALID_ARGUMENT, "writer: layer {} is not an MoE layer (the config's {} MoE layers)", layer,
             config_.moe_layer_count());
    if (banks_.count(layer)) fail(WASTE_ERR_INVALID_ARGUMENT, "writer: the bank of layer {} was already written", layer);
    const uint64_t books_end = static_cast<uint64_t>(codebook_base) + 3ull * spec_.quant->stages;
    if (codebook_base > 0xFFFF || books_end > codebook_count_)
        fail(WASTE_ERR_INVALID_ARGUMENT,
             "writer: layer {}: codebook_base {} + 3*{} stages needs codebooks not yet written ({} written)", layer,
             codebook_base, spec_.quant->stages, codebook_count_);
    ExpertBank bank;
    bank.layer = layer;
    bank.file = fmt::format("experts-L{}.bin", layer);
    bank.experts = static_cast<uint32_t>(config_.experts);
    bank.codebook_base = codebook_base;
    bank.record_bytes = layout_.record_bytes;
    bank.bytes = bank.record_bytes * bank.experts;
    platform::OutputFileOptions file_options;
    file_options.buffer_bytes = options_.buffer_bytes;
    file_options.want_direct = options_.direct_io;
    file_options.pool = pool_;
    bank_file_ = std::make_unique<platform::OutputFile>(path(bank.file), file_options);
    open_bank_ = bank;
    next_expert_ = 0;
}

void ContainerWriter::add_expert(int expert, std::span<const uint8_t> gate, std::span<const uint8_t> up,
                                 std::span<const uint8_t> down, std::span<const uint16_t> scales) {
    const ExpertLayout& l = layout_;
    if (gate.size() != l.gate.index_bytes || up.size() != l.up.index_bytes || down.size() != l.down.index_bytes ||
        scales.size() != l.scale_count)
        fail(WASTE_ERR_INVALID_ARGUMENT,
             "writer: expert {}: index bytes {}/{}/{} and {} scales, the layout needs {}/{}/{} and {}", expert,
             gate.size(), up.size(), down.size(), scales.size(), l.gate.index_bytes, l.up.index_bytes,
             l.down.index_bytes, l.scale_count);
    const std::span<uint8_t> record = begin_expert(expert);
    std::memcpy(record.data() + l.gate_off, gate.data(), gate.size());
    std::memcpy(record.data() + l.up_off, up.data(), up.size());
    std::memcpy(record.data() + l.down_off, down.data(), down.size());
    std::memcpy(record.data() + l.scales_off, scales.data(), scales.size() * 2);
    end_expert();
}

std::span<uint8_t> ContainerWriter::begin_expert(int expert) {
    if (!open_bank_) fail(WASTE_ERR_INVALID_ARGUMENT, "writer: expert {} added with no bank begun", expert);
    if (!open_record_.empty())
        fail(WASTE_ERR_INVALID_ARGUMENT, "writer: expert {} begun before expert {} ended", expert, next_expert_);
    if (expert < 0 || static_cast<uint32_t>(expert) != next_expert_ || next_expert_ >= open_bank_->experts)
        fail(WASTE_ERR_INVALID_ARGUMENT, "writer: expert {} of layer {} added out of order (next is {} of {})", expert,
             open_bank_->layer, next_expert_, open_bank_->experts);
    open_record_ = bank_file_->claim(layout_.record_bytes);
    open_record_staged_ = open_record_.empty();
    if (open_record_staged_) {
        if (staging_.size() != layout_.record_bytes) staging_ = platform::AlignedBuffer(layout_.record_bytes);
        open_record_ = staging_.span();
    }
    return open_record_;
}

void ContainerWriter::end_expert() {
    if (open_record_.empty()) fail(WASTE_ERR_INVALID_ARGUMENT, "writer: end_expert with no expert begun");
    const ExpertLayout& l = layout_;
    const int layer = open_bank_->layer, expert = static_cast<int>(next_expert_);
    uint8_t* record = open_record_.data();
    const std::span<uint8_t> region = open_record_;
    open_record_ = {};  // whatever happens next, this record is closed
    for (uint32_t i = 0; i < l.scale_count; ++i) {
        uint16_t scale;
        std::memcpy(&scale, record + l.scales_off + 2 * i, 2);
        if ((scale & 0x7C00) == 0x7C00)
            fail(WASTE_ERR_INVALID_ARGUMENT, "writer: expert {} of layer {}: row scale {} (0x{:04x}) is not finite",
                 expert, layer, i, scale);
    }
    std::memset(record + l.payload_end, 0, l.record_bytes - l.payload_end);
    ExpertRecordHeader h;
    h.magic = expert_record_magic;
    h.layer = static_cast<uint16_t>(layer);
    h.expert = static_cast<uint16_t>(expert);
    h.fmt = l.record_fmt;
    h.codebook_id = static_cast<uint16_t>(open_bank_->codebook_base);
    h.blocks = static_cast<uint32_t>(l.record_bytes / direct_io_block);
    h.gate_off = l.gate_off;
    h.up_off = l.up_off;
    h.down_off = l.down_off;
    h.scales_off = l.scales_off;
    h.crc32 = platform::crc32(record + expert_header_bytes, l.payload_end - expert_header_bytes);
    encode_expert_header(h, record);
    if (open_record_staged_) bank_file_->write(region);
    else bank_file_->advance(region.size());
    ++next_expert_;
}

void ContainerWriter::end_bank() {
    if (!open_bank_) fail(WASTE_ERR_INVALID_ARGUMENT, "writer: end_bank with no bank begun");
    if (!open_record_.empty()) fail(WASTE_ERR_INVALID_ARGUMENT, "writer: end_bank with expert {} still open", next_expert_);
    if (next_expert_ != open_bank_->experts)
        fail(WASTE_ERR_INVALID_ARGUMENT, "writer: bank of layer {} ended after {} of its {} experts", open_bank_->layer,
             next_expert_, open_bank_->experts);
    WASTE_CHECK(bank_file_->size() == open_bank_->bytes);
    // The tail is written in the background while the next bank is drawn;
    // the fsyncs and renames wait for finish(): one device flush for all the
    // banks instead of a stall after each (the manifest, written after them,
    // is the commit point). The previous bank's buffers are freed here, and
    // at most max_pending_banks files stay open.
    for (const std::unique_ptr<platform::OutputFile>& file : committing_) file->wait_written();
    if (committing_.size() >= max_pending_banks) {
        committing_.front()->finish_commit();
        committing_.erase(committing_.begin());
    }
    bank_file_->start_commit();
    bank_bytes_done_ += bank_file_->size();
    committing_.push_back(std::move(bank_file_));
    banks_[open_bank_->layer] = *open_bank_;
    open_bank_.reset();
}

void ContainerWriter::add_file(const std::string& name, std::string_view bytes) {
    if (finished_) fail(WASTE_ERR_INVALID_ARGUMENT, "writer: file {} added after finish", name);
    const bool plain = !name.empty() && name.size() <= 255 && name.find('/') == std::string::npos &&
                       name.find('\\') == std::string::npos && name.find("..") == std::string::npos;
    if (!plain) fail(WASTE_ERR_INVALID_ARGUMENT, "writer: \"{}\" is not a plain file name", name);
    if (name == "manifest.json" || name == "trunk.bin" || name == "codebooks.bin" || is_bank_file_name(name))
        fail(WASTE_ERR_INVALID_ARGUMENT, "writer: {} is written by the writer itself, not as an optional file", name);
    platform::write_small_file(path(name), bytes);
    small_file_bytes_ += bytes.size();
}

void ContainerWriter::finish() {
    if (finished_) fail(WASTE_ERR_INVALID_ARGUMENT, "writer: finish called twice");
    if (open_tensor_) fail(WASTE_ERR_INVALID_ARGUMENT, "writer: finish with trunk tensor {} still open", open_tensor_->name);
    if (open_bank_) fail(WASTE_ERR_INVALID_ARGUMENT, "writer: finish with the bank of layer {} still open", open_bank_->layer);
    for (int layer = 0; layer < config_.layers; ++layer)
        if (config_.is_moe_layer(layer) && !banks_.count(layer)) fail(WASTE_ERR_INVALID_ARGUMENT, "writer: MoE layer {} has no expert bank", layer);

    if (!trunk_file_) {
        platform::OutputFileOptions file_options;
        file_options.want_direct = false;
        file_options.buffer_bytes = 4096;
        trunk_file_ = std::make_unique<platform::OutputFile>(path("trunk.bin"), file_options);
    }
    const uint64_t trunk_bytes = trunk_file_->size();
    trunk_file_->start_commit();
    if (codebook_file_) codebook_file_->start_commit();
    trunk_file_->finish_commit();
    if (codebook_file_) codebook_file_->finish_commit();
    finish_commits();

    ordered_json manifest;
    manifest["format_version"] = 0;
    manifest["arch"] = spec_.arch;
    manifest["tensor_prefix"] = spec_.tensor_prefix;
    manifest["config"] = spec_.config;
    if (spec_.quant) manifest["expert_quant"] = expert_quant_json(*spec_.quant);
    ordered_json layers = ordered_json::object();
    for (const auto& [layer, bank] : banks_)  // std::map: ascending layers
        layers[std::to_string(layer)] = ordered_json{
            {"file", bank.file}, {"experts", bank.experts}, {"bytes", bank.bytes}, {"codebook_base", bank.codebook_base}};
    manifest["layers"] = std::move(layers);
    ordered_json trunk = ordered_json::array();
    for (const TrunkTensor& t : trunk_) trunk.push_back(trunk_entry_json(t));
    manifest["trunk"] = std::move(trunk);
    const std::string text = manifest.dump(1) + "\n";

    // Read it back with the reader's rules before committing.
    try {
        const Manifest check = parse_manifest(text);
        check_trunk_extents(check, trunk_bytes);
        if (!check.banks.empty()) check_codebook_bases(check, codebook_count_);
    } catch (const Error& error) {
        fail(WASTE_ERR_INVALID_ARGUMENT, "writer: the container would not be readable: {}", error.what());
    }
    platform::sync_directory(directory_);  // every data file's rename is durable before the commit point
    platform::write_small_file(path("manifest.json"), text);
    platform::sync_directory(directory_);
    small_file_bytes_ += text.size();
    finished_ = true;
}

}  // namespace waste::format
