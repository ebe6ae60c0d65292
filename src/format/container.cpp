#include "format/container.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>

#include "format/f16.h"
#include "format/gguf.h"
#include "format/trunk_codec.h"
#include "platform/error.h"
#include "platform/utf8_path.h"

namespace waste::format {
namespace {

constexpr uint64_t max_manifest_bytes = uint64_t{256} << 20;

uint64_t file_size_or_fail(const std::string& path, const std::string& what) {
    std::error_code error;
    const auto status = std::filesystem::status(platform::utf8_path(path), error);
    if (error || !std::filesystem::exists(status)) fail(WASTE_ERR_IO, "{} {} is missing: {}", what, path, error ? error.message() : "no such file");
    if (!std::filesystem::is_regular_file(status)) fail(WASTE_ERR_IO, "{} {} is not a regular file", what, path);
    return std::filesystem::file_size(platform::utf8_path(path));
}

}  // namespace

void LoadedTensor::row(uint64_t r, std::span<float> out) const {
    if (r >= info->rows) fail(WASTE_ERR_INVALID_ARGUMENT, "row {} of tensor {} is out of range (rows {})", r, info->name, info->rows);
    dequantize_row(*info, payload, scales, r, out);
}

std::vector<float> LoadedTensor::dequantize() const {
    std::vector<float> values(info->rows * info->cols);
    for (uint64_t r = 0; r < info->rows; ++r)
        dequantize_row(*info, payload, scales, r, std::span<float>(values.data() + r * info->cols, info->cols));
    return values;
}

std::unique_ptr<Container> Container::open(const std::string& directory, const ContainerOptions& options) {
    std::unique_ptr<Container> c(new Container());
    c->directory_ = directory;
    c->options_ = options;
    std::error_code error;
    if (!std::filesystem::is_directory(platform::utf8_path(directory), error)) {
        if (has_gguf_magic(directory))
            fail(WASTE_ERR_UNSUPPORTED, "{} is a GGUF file: convert it first (waste convert {} OUT; docs/GGUF.md), "
                 "running a GGUF without converting it is not supported yet", directory, directory);
        fail(WASTE_ERR_IO, "{} is not a container directory (expected a folder with manifest.json)", directory);
    }
    const std::string manifest_path = directory + "/manifest.json";
    file_size_or_fail(manifest_path, "manifest");
    const std::string text = platform::read_small_file(manifest_path, max_manifest_bytes);
    c->manifest_ = parse_manifest(text);
    c->container_bytes_ = text.size();
    // generation_config.json (optional, the release's verbatim): its EOS ids
    // end a generation too, and its sampling is the model's default
    // (format/model_config.h).
    const std::string generation_path = directory + "/generation_config.json";
    if (std::filesystem::exists(platform::utf8_path(generation_path), error)) {
        const std::string generation_text = platform::read_small_file(generation_path, max_generation_config_bytes);
        c->container_bytes_ += generation_text.size();
        const nlohmann::json generation = nlohmann::json::parse(generation_text, nullptr, false);
        if (generation.is_discarded()) fail_format("generation_config.json: not JSON");
        add_eos_ids(&c->manifest_.config,
                    parse_special_ids(generation, "generation_config.json", c->manifest_.config.vocab).eos);
        c->sampling_ = parse_sampling_defaults(generation, "generation_config.json");
    }
    const Manifest& m = c->manifest_;

    c->trunk_file_bytes_ = file_size_or_fail(directory + "/trunk.bin", "trunk");
    c->container_bytes_ += c->trunk_file_bytes_;
    check_trunk_extents(m, c->trunk_file_bytes_);

    if (!m.banks.empty()) {
        c->layout_ = format::expert_layout(m.config, m.quant);
        const std::string codebook_path = directory + "/codebooks.bin";
        const uint64_t codebook_bytes = file_size_or_fail(codebook_path, "codebooks");
        c->container_bytes_ += codebook_bytes;
        const uint64_t record = m.quant.codebook_record_bytes();
        if (codebook_bytes % record != 0)
            fail_format("codebooks.bin: {} bytes is not a multiple of the {}-byte record ({} entries x {})", codebook_bytes,
                        record, m.quant.entries, m.quant.vec_dim);
        c->codebook_records_ = codebook_bytes / record;
        check_codebook_bases(m, c->codebook_records_);
        if (c->codebook_records_ * m.quant.entries * m.quant.vec_dim > (uint64_t{1} << 32))
            fail_format("codebooks.bin: {} records is more than this reader holds", c->codebook_records_);
        // Read and check only the records a layer references; a resumed
        // conversion may leave all-zero gap records that nothing uses.
        std::vector<uint8_t> raw(codebook_bytes);
        platform::DirectFile(codebook_path, false).read_at(0, raw);
        const size_t per_book = static_cast<size_t>(m.quant.entries) * m.quant.vec_dim;
        c->codebook_values_.assign(c->codebook_records_ * per_book, 0.0f);
        std::vector<bool> checked(c->codebook_records_, false);
        for (const auto& [layer, bank] : m.banks) {
            for (uint64_t b = bank.codebook_base; b < bank.codebook_base + 3ull * m.quant.stages; ++b) {
                if (checked[b]) continue;
                checked[b] = true;
                const uint8_t* p = raw.data() + b * record;
                uint32_t magic;
                uint16_t id;
                uint32_t entries;
                std::memcpy(&magic, p, 4);
                std::memcpy(&id, p + 4, 2);
                std::memcpy(&entries, p + 8, 4);
                const uint8_t vec_dim = p[7];
                if (magic != codebook_magic)
                    fail(WASTE_ERR_CORRUPT, "codebook {} (layer {}): magic 0x{:08x} is not WCBK", b, layer, magic);
                if (id != (b & 0xFFFF))
                    fail(WASTE_ERR_CORRUPT, "codebook {} (layer {}): id {} is not its record index", b, layer, id);
                if (vec_dim != m.quant.vec_dim || entries != static_cast<uint32_t>(m.quant.entries))
                    fail(WASTE_ERR_CORRUPT, "codebook {} (layer {}): {} entries x {} disagrees with expert_quant {} x {}", b,
                         layer, entries, vec_dim, m.quant.entries, m.quant.vec_dim);
                float* out = c->codebook_values_.data() + b * per_book;
                for (size_t i = 0; i < per_book; ++i) {
                    uint16_t bits;
                    std::memcpy(&bits, p + 16 + 2 * i, 2);
                    out[i] = f16_to_f32(bits);
                    if (!std::isfinite(out[i]))
                        fail(WASTE_ERR_CORRUPT, "codebook {} (layer {}): centroid value {} is not finite", b, layer, i);
                }
            }
        }
        for (const auto& [layer, bank] : m.banks) {
            const std::string path = directory + "/" + bank.file;
            platform::DirectFile file(path, options.want_direct_io);
            if (file.size() != bank.bytes)
                fail_format("layer {}: bank {} is {} bytes, the manifest says {} (truncated or foreign bank)", layer,
                            bank.file, file.size(), bank.bytes);
            if (bank.record_bytes != c->layout_.record_bytes)
                fail_format("layer {}: records of {} bytes, but the expert shapes need {}", layer, bank.record_bytes,
                            c->layout_.record_bytes);
            c->container_bytes_ += file.size();
            c->banks_.emplace(layer, std::move(file));
        }
    }
    for (const char* optional :
         {"tokenizer.model", "specials.json", "tokenizer.json", "chat.json", "chat_template.jinja", "vision.json"}) {
        const std::filesystem::path extra = platform::utf8_path(directory + "/" + optional);
        std::error_code ignored;
        if (std::filesystem::is_regular_file(extra, ignored)) c->container_bytes_ += std::filesystem::file_size(extra, ignored);
    }
    return c;
}

platform::IoMode Container::expert_io_mode() const {
    return banks_.empty() ? platform::IoMode::buffered : banks_.begin()->second.mode();
}

std::string Container::expert_io_reason() const {
    return banks_.empty() ? "no expert banks" : banks_.begin()->second.io_mode_reason();
}

bool Container::is_text_tensor(const TrunkTensor& tensor) const {
    return tensor.name.compare(0, manifest_.tensor_prefix.size(), manifest_.tensor_prefix) == 0;
}

namespace {
constexpr uint64_t slot_alignment = 64;  // cache line, and any SIMD load width
uint64_t aligned_slot(uint64_t bytes) { return (bytes + slot_alignment - 1) / slot_alignment * slot_alignment; }
}  // namespace

// Exactly what load_trunk allocates: every text tensor, embed_tokens
// included, each payload and scale block in its own 64-byte-aligned slot.
// Incident (issue 18): this used to leave out a quantised embed_tokens,
// which load_trunk loads whole all the same, so on `mid` (34 MB of Q8G
// embedding) every command ran over small budgets (eval peaked at 176,812
// KiB = 181.1 MB under a 154.5 MB budget; scripts/soak.py found it).
uint64_t Container::resident_trunk_bytes() const {
    uint64_t total = 0;
    for (const TrunkTensor& t : manifest_.trunk)
        if (is_text_tensor(t)) total += aligned_slot(t.payload_bytes) + aligned_slot(t.scale_bytes);
    return total;
}

// Reads `tensors` into `storage` (sized by slot_bytes), each payload and
// scale block in its own aligned slot, checking every f16 scale and F32 value
// is finite; `bind` receives each loaded tensor.
void Container::read_tensors(const std::vector<const TrunkTensor*>& tensors, platform::AlignedBuffer& storage,
                             const std::function<void(const LoadedTensor&)>& bind) const {
    uint64_t total = 0;
    for (const TrunkTensor* t : tensors) total += aligned_slot(t->payload_bytes) + aligned_slot(t->scale_bytes);
    storage = platform::AlignedBuffer(total);
    platform::DirectFile file(directory_ + "/trunk.bin", options_.want_direct_io);
    if (file.size() != trunk_file_bytes_) fail(WASTE_ERR_IO, "trunk.bin changed size while opening");
    uint64_t cursor = 0;
    for (const TrunkTensor* tp : tensors) {
        const TrunkTensor& t = *tp;
        LoadedTensor loaded;
        loaded.info = &t;
        std::span<uint8_t> payload(storage.data() + cursor, t.payload_bytes);
        file.read_any(t.offset, payload);
        cursor += aligned_slot(t.payload_bytes);
        std::span<uint8_t> scales(storage.data() + cursor, t.scale_bytes);
        if (t.scale_bytes) file.read_any(t.scale_offset, scales);
        cursor += aligned_slot(t.scale_bytes);
        for (uint64_t i = 0; i < t.scale_bytes; i += 2) {
            uint16_t bits;
            std::memcpy(&bits, scales.data() + i, 2);
            if ((bits & 0x7C00) == 0x7C00)
                fail(WASTE_ERR_CORRUPT, "trunk tensor {}: scale {} is not finite (0x{:04x})", t.name, i / 2, bits);
        }
        if (t.fmt == TrunkFormat::f32)
            for (uint64_t i = 0; i < t.payload_bytes; i += 4) {
                float value;
                std::memcpy(&value, payload.data() + i, 4);
                if (!std::isfinite(value))
                    fail(WASTE_ERR_CORRUPT, "trunk tensor {}: value {} is not finite", t.name, i / 4);
            }
        loaded.payload = payload;
        loaded.scales = scales;
        bind(loaded);
    }
}

void Container::load_trunk() {
    if (trunk_loaded_) return;
    std::vector<const TrunkTensor*> text;
    for (const TrunkTensor& t : manifest_.trunk)
        if (is_text_tensor(t)) text.push_back(&t);
    read_tensors(text, trunk_storage_, [&](const LoadedTensor& loaded) {
        tensors_[loaded.info->name.substr(manifest_.tensor_prefix.size())] = loaded;
    });
    trunk_loaded_ = true;
}

TensorSet Container::load_tensors(const std::vector<std::string>& names) const {
    std::vector<const TrunkTensor*> wanted;
    for (const std::string& name : names) {
        const TrunkTensor* found = nullptr;
        for (const TrunkTensor& t : manifest_.trunk)
            if (t.name == name) found = &t;
        if (!found) fail_format("trunk: tensor {} is missing", name);
        wanted.push_back(found);
    }
    TensorSet set;
    read_tensors(wanted, set.storage, [&](const LoadedTensor& loaded) { set.tensors[loaded.info->name] = loaded; });
    return set;
}

uint64_t Container::tensors_bytes(const std::vector<std::string>& names) const {
    uint64_t total = 0;
    for (const std::string& name : names)
        if (const TrunkTensor* t = trunk_tensor(name)) total += aligned_slot(t->payload_bytes) + aligned_slot(t->scale_bytes);
    return total;
}

const TrunkTensor* Container::trunk_tensor(const std::string& name) const {
    for (const TrunkTensor& t : manifest_.trunk)
        if (t.name == name) return &t;
    return nullptr;
}

const LoadedTensor* Container::tensor(const std::string& name) const {
    WASTE_CHECK(trunk_loaded_);
    auto it = tensors_.find(name);
    return it == tensors_.end() ? nullptr : &it->second;
}

const LoadedTensor& Container::require(const std::string& name) const {
    const LoadedTensor* t = tensor(name);
    if (!t) fail_format("trunk: tensor {}{} is missing", manifest_.tensor_prefix, name);
    return *t;
}

std::span<const float> Container::codebook(uint32_t record) const {
    WASTE_CHECK(record < codebook_records_);
    const size_t per_book = static_cast<size_t>(manifest_.quant.entries) * manifest_.quant.vec_dim;
    return {codebook_values_.data() + record * per_book, per_book};
}

const ExpertBank& Container::bank(int layer) const {
    auto it = manifest_.banks.find(layer);
    if (it == manifest_.banks.end()) fail(WASTE_ERR_INVALID_ARGUMENT, "layer {} has no expert bank", layer);
    return it->second;
}

const platform::DirectFile& Container::bank_file(int layer) const {
    auto it = banks_.find(layer);
    if (it == banks_.end()) fail(WASTE_ERR_INVALID_ARGUMENT, "layer {} has no expert bank", layer);
    return it->second;
}

void Container::check_expert(int layer, int expert, std::span<const uint8_t> record) const {
    const ExpertBank& b = bank(layer);
    check_expert_record(record, layer, expert, b, manifest_.quant, layout_, codebook_records_);
    check_expert_indices(record, layer, expert, manifest_.quant, layout_);
    if (options_.verify_checksums) verify_expert_checksum(record, layer, expert, layout_);
}

void Container::read_expert(int layer, int expert, std::span<uint8_t> buffer) const {
    const ExpertBank& b = bank(layer);
    if (expert < 0 || static_cast<uint32_t>(expert) >= b.experts)
        fail(WASTE_ERR_INVALID_ARGUMENT, "expert {} of layer {} is out of range (experts {})", expert, layer, b.experts);
    if (buffer.size() != b.record_bytes)
        fail(WASTE_ERR_INVALID_ARGUMENT, "buffer of {} bytes for a record of {}", buffer.size(), b.record_bytes);
    try {
        bank_file(layer).read_at(static_cast<uint64_t>(expert) * b.record_bytes, buffer);
    } catch (const Error& error) {
        fail(error.status(), "expert {} of layer {}: {}", expert, layer, error.what());
    }
    check_expert(layer, expert, buffer);
}

}  // namespace waste::format
