#include "convert/checkpoint.h"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "convert/weight_decode.h"
#include "platform/error.h"
#include "platform/utf8_path.h"

namespace waste::convert {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr uint64_t max_config_bytes = uint64_t{16} << 20;
constexpr uint64_t max_index_bytes = uint64_t{512} << 20;  // K3's index names ~250k tensors (~30 MB)
// Raw bytes decoded per step: small enough that the decoded floats are still
// in cache when they are checked for NaN/Inf, large enough that pread calls are few.
constexpr uint64_t raw_chunk_bytes = uint64_t{256} << 10;
constexpr uint64_t default_fp8_block = 128;                // other-families §1: weight_block_size [128, 128]
constexpr uint64_t default_int4_group = 32;                // other-families §1: group_size 32
constexpr uint64_t mxfp4_group = 32;                       // other-families §8: one E8M0 per 32 values
constexpr uint64_t max_block = 1 << 16;

bool ends_with(std::string_view text, std::string_view suffix) {
    return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string strip(std::string_view text, std::string_view suffix) {
    return std::string(text.substr(0, text.size() - suffix.size()));
}

std::string shape_text(const std::vector<int64_t>& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

json read_json_file(const fs::path& path, uint64_t limit, const char* what) {
    std::error_code ec;
    const auto size = fs::file_size(path, ec);
    if (ec) fail(WASTE_ERR_IO, "{}: cannot read {}: {}", platform::utf8_text(path), what, ec.message());
    if (size > limit) fail_format("{}: {} of {} bytes exceeds the {} byte limit", platform::utf8_text(path), what, size, limit);
    std::ifstream in(path, std::ios::binary);
    if (!in) fail(WASTE_ERR_IO, "{}: cannot open {}", platform::utf8_text(path), what);
    std::string text(static_cast<size_t>(size), '\0');
    in.read(text.data(), static_cast<std::streamsize>(size));
    if (static_cast<uint64_t>(in.gcount()) != size) fail(WASTE_ERR_IO, "{}: short read of {}", platform::utf8_text(path), what);
    try {
        return json::parse(text);
    } catch (const json::exception& e) {
        fail_format("{}: {} is not valid JSON: {}", platform::utf8_text(path), what, e.what());
    }
}

bool plain_file_name(const std::string& name) {
    return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
           name.find('\\') == std::string::npos && name.find('\0') == std::string::npos;
}

bool is_float_dtype(Dtype d) { return d == Dtype::f32 || d == Dtype::f16 || d == Dtype::bf16; }

// Decodes `count` values of a float dtype.
void decode_float(Dtype dtype, const uint8_t* src, size_t count, float* out) {
    switch (dtype) {
        case Dtype::f32: decode_f32(src, count, out); return;
        case Dtype::f16: decode_f16(src, count, out); return;
        case Dtype::bf16: decode_bf16(src, count, out); return;
        default: WASTE_CHECK(false);
    }
}

// The quantization_config's 2-D FP8 block, else 128×128.
std::pair<uint64_t, uint64_t> fp8_block(const json& config, const std::string& what) {
    auto it = config.find("quantization_config");
    if (it == config.end() || !it->is_object() || !it->contains("weight_block_size"))
        return {default_fp8_block, default_fp8_block};
    const json& b = (*it)["weight_block_size"];
    if (!b.is_array() || b.size() != 2 || !b[0].is_number_unsigned() || !b[1].is_number_unsigned() ||
        b[0].get<uint64_t>() < 1 || b[0].get<uint64_t>() > max_block || b[1].get<uint64_t>() < 1 ||
        b[1].get<uint64_t>() > max_block)
        fail_format("{}: quantization_config.weight_block_size must be [rows, cols] in 1..{}, got {}", what, max_block,
                    b.dump());
    return {b[0].get<uint64_t>(), b[1].get<uint64_t>()};
}

// compressed-tensors' 4-bit group size (config_groups.*.weights.group_size), else 32.
uint64_t int4_group(const json& config, const std::string& what) {
    auto it = config.find("quantization_config");
    if (it == config.end() || !it->is_object() || !it->contains("config_groups") || !(*it)["config_groups"].is_object())
        return default_int4_group;
    for (const auto& [key, group] : (*it)["config_groups"].items()) {
        if (!group.is_object() || !group.contains("weights") || !group["weights"].is_object()) continue;
        const json& w = group["weights"];
        if (!w.contains("num_bits") || w["num_bits"] != 4 || !w.contains("group_size")) continue;
        if (!w["group_size"].is_number_unsigned() || w["group_size"].get<uint64_t>() < 1 ||
            w["group_size"].get<uint64_t>() > max_block)
            fail_format("{}: quantization_config.config_groups.{}.weights.group_size must be in 1..{}, got {}", what,
                        key, max_block, w["group_size"].dump());
        return w["group_size"].get<uint64_t>();
    }
    return default_int4_group;
}

}  // namespace

const char* encoding_name(WeightEncoding encoding) {
    switch (encoding) {
        case WeightEncoding::plain: return "plain";
        case WeightEncoding::fp8_block: return "fp8_block";
        case WeightEncoding::mxfp4: return "mxfp4";
        case WeightEncoding::int4_pack: return "int4_pack";
    }
    return "?";
}

uint64_t TensorInfo::rows() const {
    uint64_t r = 1;
    for (size_t i = 0; i + 1 < shape.size(); ++i) r *= static_cast<uint64_t>(shape[i]);
    return r;
}

uint64_t TensorInfo::cols() const { return shape.empty() ? 1 : static_cast<uint64_t>(shape.back()); }

bool natural_less(std::string_view a, std::string_view b) {
    size_t i = 0, j = 0;
    auto digit = [](char c) { return c >= '0' && c <= '9'; };
    while (i < a.size() && j < b.size()) {
        if (digit(a[i]) && digit(b[j])) {
            size_t ie = i, je = j;
            while (ie < a.size() && digit(a[ie])) ++ie;
            while (je < b.size() && digit(b[je])) ++je;
            size_t is = i, js = j;  // skip leading zeros, then longer = larger
            while (is + 1 < ie && a[is] == '0') ++is;
            while (js + 1 < je && b[js] == '0') ++js;
            if (ie - is != je - js) return ie - is < je - js;
            const int c = a.substr(is, ie - is).compare(b.substr(js, je - js));
            if (c != 0) return c < 0;
            if (ie - i != je - j) return ie - i < je - j;  // "01" after "1": still a strict order
            i = ie;
            j = je;
        } else {
            if (a[i] != b[j]) return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[j]);
            ++i;
            ++j;
        }
    }
    return a.size() - i < b.size() - j;
}

// ---------------------------------------------------------------------------
// open

Checkpoint Checkpoint::open(const fs::path& dir, const CheckpointOpenOptions& options) {
    Checkpoint ck;
    ck.dir_ = dir;
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) fail(WASTE_ERR_IO, "{}: not a checkpoint directory", platform::utf8_text(dir));

    const fs::path config_path = dir / "config.json";
    if (!fs::exists(config_path, ec)) fail(WASTE_ERR_IO, "{}: no config.json", platform::utf8_text(dir));
    ck.full_config_ = read_json_file(config_path, max_config_bytes, "config.json");
    if (!ck.full_config_.is_object()) fail_format("{}: config.json must be a JSON object", platform::utf8_text(config_path));
    if (ck.full_config_.contains("text_config") && !ck.full_config_["text_config"].is_null()) {
        if (!ck.full_config_["text_config"].is_object())
            fail_format("{}: text_config must be an object, got {}", platform::utf8_text(config_path),
                        ck.full_config_["text_config"].dump().substr(0, 80));
        ck.nested_ = true;
        ck.text_config_ = ck.full_config_["text_config"];
    }

    // Which physical tensor lives in which shard.
    std::map<std::string, std::string, std::less<>> tensor_shard;  // name -> shard file
    std::vector<std::string> shard_names;
    const fs::path index_path = dir / "model.safetensors.index.json";
    if (fs::exists(index_path, ec)) {
        const json index = read_json_file(index_path, max_index_bytes, "model.safetensors.index.json");
        if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
            fail_format("{}: has no \"weight_map\" object", platform::utf8_text(index_path));
        std::set<std::string> unique;
        for (const auto& [tensor, shard] : index["weight_map"].items()) {
            if (!shard.is_string() || !plain_file_name(shard.get<std::string>()))
                fail_format("{}: weight_map[\"{}\"] must be a file name inside the checkpoint, got {}",
                            platform::utf8_text(index_path), tensor, shard.dump().substr(0, 120));
            tensor_shard.emplace(tensor, shard.get<std::string>());
            unique.insert(shard.get<std::string>());
        }
        if (tensor_shard.empty()) fail_format("{}: weight_map is empty", platform::utf8_text(index_path));
        shard_names.assign(unique.begin(), unique.end());
        // Every missing shard is named before anything is read or written.
        std::vector<std::string> missing;
        for (const std::string& shard : shard_names)
            if (!fs::is_regular_file(dir / platform::utf8_path(shard), ec) && !options.reclaimed.count(shard))
                missing.push_back(shard);
        if (!missing.empty()) {
            std::string list;
            for (size_t i = 0; i < missing.size() && i < 8; ++i) list += (i ? ", " : "") + missing[i];
            if (missing.size() > 8) list += fmt::format(" and {} more", missing.size() - 8);
            std::string example;
            for (const auto& [tensor, shard] : tensor_shard)
                if (shard == missing[0]) {
                    example = tensor;
                    break;
                }
            fail(WASTE_ERR_IO, "{}: {} of {} shards named by model.safetensors.index.json are missing: {} (e.g. {} holds \"{}\")",
                 platform::utf8_text(dir), missing.size(), shard_names.size(), list, missing[0], example);
        }
    } else if (fs::exists(dir / "model.safetensors", ec) || options.reclaimed.count("model.safetensors")) {
        shard_names.push_back("model.safetensors");
    } else {
        fail(WASTE_ERR_IO, "{}: neither model.safetensors.index.json nor model.safetensors", platform::utf8_text(dir));
    }
    std::sort(shard_names.begin(), shard_names.end(), [](const std::string& a, const std::string& b) { return natural_less(a, b); });

    ck.files_.reserve(shard_names.size());
    for (const std::string& shard : shard_names) {
        const auto reclaimed = options.reclaimed.find(shard);
        const fs::path shard_path = dir / platform::utf8_path(shard);
        if (reclaimed != options.reclaimed.end() && !fs::exists(shard_path, ec))
            ck.files_.push_back(SafetensorsFile::reclaimed(shard_path, reclaimed->second.header_json,
                                                           reclaimed->second.file_bytes, reclaimed->second.kept));
        else
            ck.files_.push_back(SafetensorsFile::open(shard_path));
    }
    if (tensor_shard.empty())
        for (const TensorEntry& t : ck.files_[0].tensors()) tensor_shard.emplace(t.name, shard_names[0]);

    std::map<std::string, size_t> shard_index;
    for (size_t i = 0; i < shard_names.size(); ++i) shard_index[shard_names[i]] = i;
    std::map<std::string, Part, std::less<>> physical;
    ck.shard_infos_.resize(shard_names.size());
    for (size_t i = 0; i < shard_names.size(); ++i) {
        ck.shard_infos_[i].file = shard_names[i];
        ck.shard_infos_[i].bytes = ck.files_[i].file_bytes();
    }
    for (const auto& [tensor, shard] : tensor_shard) {
        const size_t s = shard_index.at(shard);
        const TensorEntry* entry = ck.files_[s].find(tensor);
        if (!entry)
            fail_format("{}: model.safetensors.index.json maps tensor \"{}\" to {}, which does not hold it",
                        platform::utf8_text(dir), tensor, shard);
        physical[tensor] = Part{&ck.files_[s], entry};
        ck.shard_infos_[s].tensors.push_back(tensor);
    }

    // Group companion tensors (scales, packed shapes) with their weight.
    const std::string what = platform::utf8_text(dir);
    // quantization_config sits at the top of config.json; accept it inside text_config too.
    const json& cfg = ck.full_config_.contains("quantization_config") || !ck.nested_ ? ck.full_config_ : ck.text_config_;
    std::set<std::string, std::less<>> consumed;
    auto find_part = [&](const std::string& name) -> const Part* {
        auto it = physical.find(name);
        return it == physical.end() ? nullptr : &it->second;
    };
    auto file_of = [&](const Part& p) { return platform::utf8_text(p.file->path().filename()); };
    auto describe = [&](const Part& p) {
        return fmt::format("\"{}\" ({} {} in {})", p.entry->name, dtype_name(p.entry->dtype), shape_text(p.entry->shape),
                           file_of(p));
    };
    auto add = [&](Weight w) {
        w.info.numel = 1;
        for (int64_t d : w.info.shape) w.info.numel *= static_cast<uint64_t>(d);
        w.info.dtype = w.main.entry->dtype;
        w.info.shard = file_of(w.main);
        for (const std::string& part : w.info.parts) w.info.part_shards.push_back(file_of(*find_part(part)));
        if (physical.count(w.info.name) && w.info.parts[0] != w.info.name)
            fail_format("{}: weight \"{}\" is stored both plain and as {} ({})", what, w.info.name,
                        encoding_name(w.info.encoding), w.info.parts[0]);
        const std::string name = w.info.name;
        if (!ck.weights_.emplace(name, std::move(w)).second)
            fail_format("{}: weight \"{}\" is stored twice", what, name);
    };

    for (const auto& [name, part] : physical) {
        const TensorEntry& e = *part.entry;
        if (e.dtype == Dtype::f8_e4m3) {
            // other-families §1: fp8 [out, in] with fp32 scale_inv [ceil(out/128), ceil(in/128)].
            const Part* scale = find_part(name + "_scale_inv");
            if (!scale)
                fail_format("{}: FP8 tensor {} has no \"{}_scale_inv\" (only 2-D block-scaled FP8 is read)", what,
                            describe(part), name);
            if (e.shape.size() != 2) fail_format("{}: FP8 tensor {} must be 2-D [out, in]", what, describe(part));
            const auto [b0, b1] = fp8_block(cfg, what);
            const std::vector<int64_t> want = {static_cast<int64_t>(ceil_div(e.shape[0], b0)),
                                               static_cast<int64_t>(ceil_div(e.shape[1], b1))};
            if (!is_float_dtype(scale->entry->dtype) || scale->entry->shape != want)
                fail_format("{}: {} must be F32/BF16/F16 {} for FP8 weight {} with {}x{} blocks", what, describe(*scale),
                            shape_text(want), describe(part), b0, b1);
            Weight w;
            w.info.name = name;
            w.info.encoding = WeightEncoding::fp8_block;
            w.info.shape = e.shape;
            w.info.parts = {name, scale->entry->name};
            w.main = part;
            w.scale = *scale;
            w.block_rows = b0;
            w.block_cols = b1;
            consumed.insert(name);
            consumed.insert(scale->entry->name);
            add(std::move(w));
        } else if (ends_with(name, "_packed") && e.dtype == Dtype::i32) {
            // other-families §1: compressed-tensors pack-quantized INT4.
            const std::string base = strip(name, "_packed");
            const Part* scale = find_part(base + "_scale");
            if (!scale) fail_format("{}: INT4 tensor {} has no \"{}_scale\"", what, describe(part), base);
            if (e.shape.size() != 2) fail_format("{}: INT4 tensor {} must be 2-D [out, in/8]", what, describe(part));
            const int64_t out = e.shape[0], words = e.shape[1];
            int64_t in = words * 8;
            Weight w;
            w.info.parts = {name, scale->entry->name};
            if (const Part* shape = find_part(base + "_shape")) {
                const TensorEntry& s = *shape->entry;
                if ((s.dtype != Dtype::i64 && s.dtype != Dtype::i32) || s.numel != 2)
                    fail_format("{}: {} must be 2 integers [out, in]", what, describe(*shape));
                int64_t dims[2];
                if (s.dtype == Dtype::i64) {
                    shape->file->read(s, 0, dims, 16);
                } else {
                    int32_t d32[2];
                    shape->file->read(s, 0, d32, 8);
                    dims[0] = d32[0];
                    dims[1] = d32[1];
                }
                if (dims[0] != out || dims[1] < 1 || (dims[1] + 7) / 8 != words)
                    fail_format("{}: {} holds [{}, {}], which does not fit packed {}", what, describe(*shape), dims[0],
                                dims[1], describe(part));
                in = dims[1];
                w.info.parts.push_back(s.name);
                consumed.insert(s.name);
            }
            const uint64_t group = int4_group(cfg, what);
            const std::vector<int64_t> want = {out, static_cast<int64_t>(ceil_div(in, group))};
            if (!is_float_dtype(scale->entry->dtype) || scale->entry->shape != want)
                fail_format("{}: {} must be F32/BF16/F16 {} for INT4 weight {} (group {})", what, describe(*scale),
                            shape_text(want), describe(part), group);
            w.info.name = base;
            w.info.encoding = WeightEncoding::int4_pack;
            w.info.shape = {out, in};
            w.main = part;
            w.scale = *scale;
            w.block_cols = group;
            consumed.insert(name);
            consumed.insert(scale->entry->name);
            add(std::move(w));
        } else if ((ends_with(name, "_packed") || ends_with(name, "_blocks")) && e.dtype == Dtype::u8) {
            // other-families §8 / models.md §8: MXFP4, E8M0 scale per 32 values.
            const bool blocks = ends_with(name, "_blocks");
            const std::string base = strip(name, blocks ? "_blocks" : "_packed");
            const Part* scale = find_part(base + "_scales");
            if (!scale && !blocks) scale = find_part(base + "_scale");
            if (!scale)
                fail_format("{}: MXFP4 tensor {} has no \"{}_scale{}\"", what, describe(part), base, blocks ? "s" : "(s)");
            std::vector<int64_t> logical = e.shape, want_scale = e.shape;
            if (blocks) {
                if (e.shape.size() < 2 || e.shape.back() != 16)
                    fail_format("{}: MXFP4 blocks {} must be [.., groups, 16]", what, describe(part));
                logical.pop_back();
                logical.back() *= 32;
                want_scale.pop_back();
            } else {
                if (e.shape.empty()) fail_format("{}: MXFP4 tensor {} must be [.., in/2]", what, describe(part));
                logical.back() *= 2;
                want_scale.back() = static_cast<int64_t>(ceil_div(logical.back(), mxfp4_group));
            }
            if (scale->entry->dtype != Dtype::u8 || scale->entry->shape != want_scale)
                fail_format("{}: {} must be U8 (E8M0) {} for MXFP4 weight {}", what, describe(*scale),
                            shape_text(want_scale), describe(part));
            Weight w;
            w.info.name = base;
            w.info.encoding = WeightEncoding::mxfp4;
            w.info.shape = logical;
            w.info.parts = {name, scale->entry->name};
            w.main = part;
            w.scale = *scale;
            consumed.insert(name);
            consumed.insert(scale->entry->name);
            add(std::move(w));
        }
    }
    for (const auto& [name, part] : physical) {
        if (consumed.count(name)) continue;
        Weight w;
        w.info.name = name;
        w.info.encoding = WeightEncoding::plain;
        w.info.shape = part.entry->shape;
        w.info.parts = {name};
        w.main = part;
        add(std::move(w));
    }

    for (const auto& [name, w] : ck.weights_) ck.names_.push_back(name);
    std::sort(ck.names_.begin(), ck.names_.end(), [](const std::string& a, const std::string& b) { return natural_less(a, b); });
    for (ShardInfo& s : ck.shard_infos_)
        std::sort(s.tensors.begin(), s.tensors.end(), [](const std::string& a, const std::string& b) { return natural_less(a, b); });
    for (const std::string& name : ck.names_) {
        const TensorInfo& info = ck.weights_.at(name).info;
        std::set<std::string> shards(info.part_shards.begin(), info.part_shards.end());
        for (const std::string& shard : shards) ck.shard_infos_[shard_index.at(shard)].weights.push_back(name);
    }
    return ck;
}

// ---------------------------------------------------------------------------
// accessors

const json& Checkpoint::config() const { return nested_ ? text_config_ : full_config_; }

std::string Checkpoint::architecture() const {
    for (const json* c : {&full_config_, &config()}) {
        auto it = c->find("architectures");
        if (it != c->end() && it->is_array() && !it->empty() && (*it)[0].is_string()) return (*it)[0].get<std::string>();
    }
    return "";
}

std::string Checkpoint::model_type() const {
    for (const json* c : {&full_config_, &config()}) {
        auto it = c->find("model_type");
        if (it != c->end() && it->is_string()) return it->get<std::string>();
    }
    return "";
}

bool Checkpoint::has(std::string_view name) const { return weights_.find(name) != weights_.end(); }

const Checkpoint::Weight& Checkpoint::weight(std::string_view name) const {
    auto it = weights_.find(name);
    if (it == weights_.end()) fail_format("{}: checkpoint has no tensor \"{}\"", platform::utf8_text(dir_), name);
    return it->second;
}

const TensorInfo& Checkpoint::info(std::string_view name) const { return weight(name).info; }

const SafetensorsFile& Checkpoint::shard_file(std::string_view file) const {
    for (size_t i = 0; i < shard_infos_.size(); ++i)
        if (shard_infos_[i].file == file) return files_[i];
    fail(WASTE_ERR_INVALID_ARGUMENT, "{}: no shard \"{}\"", platform::utf8_text(dir_), file);
}

void Checkpoint::release_shard(std::string_view file) const { shard_file(file).release(); }

// ---------------------------------------------------------------------------
// reads

void Checkpoint::check_finite(const Weight& w, uint64_t first_element, const float* values, size_t count) const {
    const size_t bad = first_non_finite(values, count);
    if (bad == count) return;
    const uint64_t element = first_element + bad;
    const uint64_t cols = std::max<uint64_t>(1, w.info.cols());
    fail_format("{}: tensor \"{}\" ({} in {}) holds a non-finite weight {} at element {} (row {}, col {}); refusing "
                "to convert it",
                platform::utf8_text(dir_), w.info.name, encoding_name(w.info.encoding), w.info.shard, values[bad], element,
                element / cols, element % cols);
}

void Checkpoint::read_plain_elements(const Weight& w, uint64_t first, uint64_t count, float* out) const {
    const Dtype dtype = w.main.entry->dtype;
    if (!is_float_dtype(dtype))
        fail(WASTE_ERR_UNSUPPORTED, "{}: tensor \"{}\" is {} in {}, not a weight the converter decodes", platform::utf8_text(dir_),
             w.info.name, dtype_name(dtype), w.info.shard);
    const size_t size = dtype_size(dtype);
    std::vector<uint8_t> raw;
    const uint64_t step = raw_chunk_bytes / size;
    for (uint64_t done = 0; done < count;) {
        const uint64_t n = std::min(step, count - done);
        float* dst = out + done;
        if (dtype == Dtype::f32) {
            w.main.file->read(*w.main.entry, (first + done) * size, dst, n * size);  // straight into the caller
        } else {
            raw.resize(n * size);
            w.main.file->read(*w.main.entry, (first + done) * size, raw.data(), n * size);
            decode_float(dtype, raw.data(), n, dst);
        }
        check_finite(w, first + done, dst, n);
        done += n;
    }
}

void Checkpoint::read_encoded_rows(const Weight& w, uint64_t row_begin, uint64_t row_count, float* out) const {
    const uint64_t cols = w.info.cols();
    const TensorEntry& main = *w.main.entry;
    const TensorEntry& scale = *w.scale.entry;
    const uint64_t main_row_bytes = main.bytes / std::max<uint64_t>(1, w.info.rows());
    const uint64_t rows_per_step = std::max<uint64_t>(1, raw_chunk_bytes / std::max<uint64_t>(1, main_row_bytes));
    std::vector<uint8_t> raw, raw_scales;
    std::vector<float> scales;
    for (uint64_t done = 0; done < row_count;) {
        const uint64_t r0 = row_begin + done;
        uint64_t n = std::min(rows_per_step, row_count - done);
        if (w.info.encoding == WeightEncoding::fp8_block) n = std::min(n, w.block_rows - r0 % w.block_rows);  // one scale row
        raw.resize(n * main_row_bytes);
        w.main.file->read(main, r0 * main_row_bytes, raw.data(), raw.size());
        float* dst = out + done * cols;
        switch (w.info.encoding) {
            case WeightEncoding::fp8_block: {
                const uint64_t scale_cols = static_cast<uint64_t>(scale.shape[1]);
                const size_t ss = dtype_size(scale.dtype);
                raw_scales.resize(scale_cols * ss);
                w.scale.file->read(scale, (r0 / w.block_rows) * scale_cols * ss, raw_scales.data(), raw_scales.size());
                scales.resize(scale_cols);
                decode_float(scale.dtype, raw_scales.data(), scale_cols, scales.data());
                for (uint64_t r = 0; r < n; ++r)
                    decode_fp8_block_row(raw.data() + r * cols, scales.data(), cols, w.block_cols, dst + r * cols);
                break;
            }
            case WeightEncoding::mxfp4: {
                const uint64_t groups = ceil_div(cols, mxfp4_group);
                raw_scales.resize(n * groups);
                w.scale.file->read(scale, r0 * groups, raw_scales.data(), raw_scales.size());
                for (uint64_t r = 0; r < n; ++r)
                    decode_mxfp4_row(raw.data() + r * main_row_bytes, raw_scales.data() + r * groups, cols, dst + r * cols);
                break;
            }
            case WeightEncoding::int4_pack: {
                const uint64_t groups = ceil_div(cols, w.block_cols);
                const size_t ss = dtype_size(scale.dtype);
                raw_scales.resize(n * groups * ss);
                w.scale.file->read(scale, r0 * groups * ss, raw_scales.data(), raw_scales.size());
                scales.resize(n * groups);
                decode_float(scale.dtype, raw_scales.data(), n * groups, scales.data());
                for (uint64_t r = 0; r < n; ++r)
                    decode_int4_row(raw.data() + r * main_row_bytes, scales.data() + r * groups, cols, w.block_cols,
                                    dst + r * cols);
                break;
            }
            case WeightEncoding::plain: WASTE_CHECK(false);
        }
        check_finite(w, r0 * cols, dst, n * cols);
        done += n;
    }
}

void Checkpoint::read_f32_rows(std::string_view name, uint64_t row_begin, uint64_t row_count, std::span<float> out) const {
    const Weight& w = weight(name);
    for (const Part* p : {&w.main, &w.scale})
        if (p->file && p->file->is_reclaimed())
            fail(WASTE_ERR_IO, "{}: tensor \"{}\" is unavailable: its shard {} was reclaimed (deleted by convert --reclaim on)",
                 platform::utf8_text(dir_), w.info.name, platform::utf8_text(p->file->path().filename()));
    const uint64_t rows = w.info.rows(), cols = w.info.cols();
    if (row_begin > rows || row_count > rows - row_begin)
        fail(WASTE_ERR_INVALID_ARGUMENT, "{}: rows [{}, {}) are outside tensor \"{}\" ({} rows)", platform::utf8_text(dir_),
             row_begin, row_begin + row_count, w.info.name, rows);
    if (out.size() != row_count * cols)
        fail(WASTE_ERR_INVALID_ARGUMENT, "{}: tensor \"{}\": {} rows of {} need a buffer of {} floats, got {}",
             platform::utf8_text(dir_), w.info.name, row_count, cols, row_count * cols, out.size());
    if (w.info.numel == 0 || row_count == 0) return;
    if (w.info.encoding == WeightEncoding::plain)
        read_plain_elements(w, row_begin * cols, row_count * cols, out.data());
    else
        read_encoded_rows(w, row_begin, row_count, out.data());
}

void Checkpoint::read_f32(std::string_view name, std::span<float> out) const {
    const TensorInfo& i = info(name);
    if (out.size() != i.numel)
        fail(WASTE_ERR_INVALID_ARGUMENT, "{}: tensor \"{}\" {} needs a buffer of {} floats, got {}", platform::utf8_text(dir_), i.name,
             shape_text(i.shape), i.numel, out.size());
    read_f32_rows(name, 0, i.rows(), out);
}

std::vector<float> Checkpoint::read_f32(std::string_view name) const {
    std::vector<float> values(info(name).numel);
    read_f32(name, values);
    return values;
}

}  // namespace waste::convert
