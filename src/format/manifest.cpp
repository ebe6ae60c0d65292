#include "format/manifest.h"

#include <limits>

#include "platform/error.h"

namespace waste::format {
namespace {

using nlohmann::json;

constexpr uint64_t max_elements = uint64_t{1} << 36;  // far above K3's largest tensor (1.2e9)
constexpr uint64_t max_file_offset = uint64_t{1} << 50;
constexpr uint32_t max_group = 1u << 16;

uint64_t get_unsigned(const json& object, const char* key, const std::string& where, uint64_t high,
                      std::optional<uint64_t> fallback = std::nullopt) {
    auto it = object.find(key);
    if (it == object.end() || it->is_null()) {
        if (fallback) return *fallback;
        fail_format("{}: required key {} is missing", where, key);
    }
    if (!it->is_number_integer()) fail_format("{}.{}: expected an integer, got {}", where, key, it->dump());
    if (it->is_number_unsigned()) {
        uint64_t value = it->get<uint64_t>();
        if (value > high) fail_format("{}.{}: {} is out of range [0, {}]", where, key, value, high);
        return value;
    }
    int64_t value = it->get<int64_t>();
    if (value < 0 || static_cast<uint64_t>(value) > high)
        fail_format("{}.{}: {} is out of range [0, {}]", where, key, value, high);
    return static_cast<uint64_t>(value);
}

std::string get_string(const json& object, const char* key, const std::string& where) {
    auto it = object.find(key);
    if (it == object.end()) fail_format("{}: required key {} is missing", where, key);
    if (!it->is_string()) fail_format("{}.{}: expected a string, got {}", where, key, it->dump());
    return it->get<std::string>();
}

bool is_plain_file_name(const std::string& name) {
    if (name.empty() || name == "." || name == ".." || name.size() > 255) return false;
    for (char c : name)
        if (c == '/' || c == '\\' || c == '\0') return false;
    return name.find("..") == std::string::npos;
}

TrunkTensor parse_trunk_entry(const json& entry, size_t index) {
    std::string where = fmt::format("manifest: trunk[{}]", index);
    if (!entry.is_object()) fail_format("{}: expected an object", where);
    TrunkTensor tensor;
    tensor.name = get_string(entry, "name", where);
    if (tensor.name.empty() || tensor.name.size() > 512) fail_format("{}.name: empty or longer than 512", where);
    where = fmt::format("manifest: trunk tensor {}", tensor.name);
    uint64_t code = get_unsigned(entry, "fmt", where, 255);
    switch (code) {
        case 0: tensor.fmt = TrunkFormat::f32; break;
        case 2: tensor.fmt = TrunkFormat::q8g; break;
        case 3: tensor.fmt = TrunkFormat::q4g; break;
        case 7: tensor.fmt = TrunkFormat::q3g; break;
        default: fail_format("{}: fmt {} is not one of 0 (F32), 2 (Q8G), 3 (Q4G), 7 (Q3G)", where, code);
    }
    tensor.offset = get_unsigned(entry, "off", where, max_file_offset);
    tensor.bytes = get_unsigned(entry, "bytes", where, max_file_offset);
    auto shape = entry.find("shape");
    if (shape == entry.end() || !shape->is_array()) fail_format("{}: shape is missing or not an array", where);
    if (shape->empty() || shape->size() > 4) fail_format("{}: shape has {} dims, expected 1 to 4", where, shape->size());
    for (const json& dim : *shape) {
        if (!dim.is_number_integer()) fail_format("{}: shape holds {}, not an integer", where, dim.dump());
        int64_t value = dim.is_number_unsigned() ? static_cast<int64_t>(std::min<uint64_t>(dim.get<uint64_t>(), INT64_MAX))
                                                 : dim.get<int64_t>();
        if (value < 1 || value > max_trunk_dim) fail_format("{}: dimension {} is out of range [1, 2^26]", where, value);
        tensor.shape.push_back(value);
    }
    if (tensor.fmt != TrunkFormat::f32) {
        tensor.group = static_cast<uint32_t>(get_unsigned(entry, "group", where, max_group, 128));
        if (tensor.group == 0) fail_format("{}: group 0", where);
        tensor.scale_offset = get_unsigned(entry, "scale_off", where, max_file_offset);
    }
    derive_trunk_layout(tensor, where);
    return tensor;
}

ExpertQuant parse_expert_quant(const json& object) {
    const std::string where = "manifest: expert_quant";
    if (!object.is_object()) fail_format("{}: expected an object", where);
    ExpertQuant quant;
    quant.fmt_name = get_string(object, "fmt", where);
    if (quant.fmt_name == "VQ3R") quant.fmt = ExpertFormat::vq3r;
    else if (quant.fmt_name == "VQ2R") quant.fmt = ExpertFormat::vq2r;
    else if (quant.fmt_name == "VQ4P") quant.fmt = ExpertFormat::vq4p;
    else fail_format("{}.fmt: \"{}\" is not VQ3R, VQ2R or VQ4P", where, quant.fmt_name);
    quant.stages = static_cast<int>(get_unsigned(object, "stages", where, 1000));
    if (quant.stages < 1 || quant.stages > 8) fail_format("{}.stages: {} is out of range [1, 8]", where, quant.stages);
    quant.vec_dim = static_cast<int>(get_unsigned(object, "vec_dim", where, 1000));
    if (quant.vec_dim < 1 || quant.vec_dim > 64) fail_format("{}.vec_dim: {} is out of range [1, 64]", where, quant.vec_dim);
    quant.entries = static_cast<int>(get_unsigned(object, "entries", where, 100000));
    if (quant.entries < 1 || quant.entries > 256)
        fail_format("{}.entries: {} is out of range [1, 256]", where, quant.entries);
    quant.index_block = static_cast<int>(get_unsigned(object, "index_block", where, 1u << 20, 64));
    if (quant.index_block != 64) fail_format("{}.index_block: {} is not 64 (the only v0 layout)", where, quant.index_block);
    quant.index_bits = static_cast<int>(get_unsigned(object, "index_bits", where, 64, 8));
    if (quant.index_bits != 8 && quant.index_bits != 6) fail_format("{}.index_bits: {} is not 8 or 6", where, quant.index_bits);
    if (quant.index_bits == 6 && !(quant.stages == 4 && quant.entries == 64))
        fail_format("{}.index_bits: 6 needs stages 4 and entries 64, got stages {} entries {}", where, quant.stages,
                    quant.entries);
    if ((quant.fmt == ExpertFormat::vq4p) != (quant.index_bits == 6))
        fail_format("{}: fmt {} disagrees with index_bits {}", where, quant.fmt_name, quant.index_bits);
    auto bits = object.find("bits_per_weight");
    if (bits != object.end() && bits->is_number()) quant.bits_per_weight = bits->get<double>();
    return quant;
}

}  // namespace

const char* trunk_format_name(TrunkFormat fmt) {
    switch (fmt) {
        case TrunkFormat::f32: return "F32";
        case TrunkFormat::q8g: return "Q8G";
        case TrunkFormat::q4g: return "Q4G";
        case TrunkFormat::q3g: return "Q3G";
    }
    return "?";
}

bool ExpertQuant::record_fmt_allowed(uint8_t code) const {
    switch (fmt) {
        case ExpertFormat::vq3r: return code == 4;
        case ExpertFormat::vq2r: return code == 4 || code == 5;  // writers use 4 for 2-stage VQ2R too
        case ExpertFormat::vq4p: return code == 8;
    }
    return false;
}

void derive_trunk_layout(TrunkTensor& tensor, const std::string& where) {
    uint64_t rows = 1;
    for (size_t i = 0; i + 1 < tensor.shape.size(); ++i) {
        rows *= static_cast<uint64_t>(tensor.shape[i]);  // each <= 2^26, checked below before the next product
        if (rows > max_elements) fail_format("{}: more than 2^36 elements", where);
    }
    tensor.rows = rows;
    tensor.cols = static_cast<uint64_t>(tensor.shape.back());
    if (tensor.rows * tensor.cols > max_elements) fail_format("{}: {} elements is more than 2^36", where, tensor.rows * tensor.cols);
    const uint64_t g = tensor.group;
    switch (tensor.fmt) {
        case TrunkFormat::f32:
            tensor.groups_per_row = 0;
            tensor.row_stride = tensor.cols * 4;
            tensor.payload_bytes = tensor.rows * tensor.row_stride;
            tensor.scale_bytes = 0;
            break;
        case TrunkFormat::q8g:
        case TrunkFormat::q4g:
        case TrunkFormat::q3g:
            tensor.groups_per_row = (tensor.cols + g - 1) / g;
            if (tensor.fmt == TrunkFormat::q8g) tensor.row_stride = tensor.groups_per_row * g;
            else if (tensor.fmt == TrunkFormat::q4g) {
                if (g % 2 != 0) fail_format("{}: Q4G group {} is odd", where, g);
                tensor.row_stride = tensor.groups_per_row * g / 2;
            } else tensor.row_stride = (3 * tensor.groups_per_row * g + 7) / 8 + 1;  // +1 guard byte
            tensor.payload_bytes = tensor.rows * tensor.row_stride;
            tensor.scale_bytes = tensor.rows * tensor.groups_per_row * 2;
            break;
    }
    const uint64_t expected = tensor.payload_bytes + tensor.scale_bytes;
    if (tensor.bytes != expected)
        fail_format("{}: bytes {} disagrees with {} [{}] which needs {}", where, tensor.bytes,
                    trunk_format_name(tensor.fmt), fmt::join(tensor.shape, ", "), expected);
}

const TrunkTensor* Manifest::find(const std::string& name) const {
    auto it = trunk_by_name.find(name);
    return it == trunk_by_name.end() ? nullptr : &trunk[it->second];
}

Manifest parse_manifest(std::string_view text) {
    constexpr size_t max_manifest_bytes = size_t{256} << 20;  // K3's is ~1 MB
    if (text.size() > max_manifest_bytes) fail_format("manifest: {} bytes is larger than 256 MiB", text.size());
    // nlohmann::json copies, prints and compares values recursively, so a
    // manifest of 200,000 nested arrays overflowed the stack (hostile_test).
    // The parser itself is iterative: containers nested deeper than any
    // config.json does (the fixtures nest 4 levels) are dropped while
    // parsing, then refused.
    constexpr int max_depth = 64;
    bool too_deep = false;
    const json::parser_callback_t limit_depth = [&](int depth, json::parse_event_t event, json&) {
        if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) &&
            depth >= max_depth) {
            too_deep = true;
            return false;
        }
        return true;
    };
    json root = json::parse(text, limit_depth, /*allow_exceptions=*/false);
    if (root.is_discarded()) fail_format("manifest: not valid JSON");
    if (too_deep) fail_format("manifest: values nested deeper than {} levels", max_depth);
    if (!root.is_object()) fail_format("manifest: expected a JSON object at the top");

    Manifest manifest;
    auto version = root.find("format_version");
    if (version == root.end()) fail_format("manifest: format_version is missing (this reader reads format 0)");
    if (!version->is_number_integer() || version->get<int64_t>() != 0)
        fail_format("manifest: format_version {} is not supported (this reader reads format 0)", version->dump());
    auto arch = root.find("arch");
    if (arch != root.end() && arch->is_string()) manifest.arch = arch->get<std::string>();
    auto prefix = root.find("tensor_prefix");
    if (prefix != root.end()) {
        if (!prefix->is_string()) fail_format("manifest: tensor_prefix is not a string");
        manifest.tensor_prefix = prefix->get<std::string>();
        if (manifest.tensor_prefix.size() > 256) fail_format("manifest: tensor_prefix longer than 256");
    }
    auto config = root.find("config");
    if (config == root.end()) fail_format("manifest: config is missing");
    manifest.config_json = *config;
    manifest.config = parse_model_config(*config, "manifest: config");
    const ModelConfig& c = manifest.config;

    const bool has_moe = c.has_moe();
    auto quant = root.find("expert_quant");
    if (quant != root.end()) {
        manifest.quant = parse_expert_quant(*quant);
        manifest.has_quant = true;
    } else if (has_moe) fail_format("manifest: expert_quant is missing but {} layers are MoE", c.moe_layer_count());
    if (has_moe) {
        const int vec = manifest.quant.vec_dim;
        if (c.expert_input() % vec != 0 || c.moe_intermediate % vec != 0)
            fail_format("manifest: expert_quant.vec_dim {} does not divide the expert shapes {} and {}", vec,
                        c.expert_input(), c.moe_intermediate);
    }

    auto layers = root.find("layers");
    if (layers == root.end() || !layers->is_object()) {
        if (has_moe) fail_format("manifest: layers is missing or not an object");
    } else {
        for (auto& [key, value] : layers->items()) {
            std::string where = fmt::format("manifest: layers.{}", key);
            // Canonical decimal only: "01" would silently replace (or be
            // replaced by) the entry "1" for the same layer.
            if (key.empty() || key.size() > 6 || key.find_first_not_of("0123456789") != std::string::npos ||
                (key.size() > 1 && key[0] == '0'))
                fail_format("{}: the key is not a decimal layer index", where);
            int layer = std::stoi(key);
            if (!c.is_moe_layer(layer))
                fail_format("{}: layer {} is not an MoE layer (the config's {} MoE layers)", where, layer,
                            c.moe_layer_count());
            if (!value.is_object()) fail_format("{}: expected an object", where);
            ExpertBank bank;
            bank.layer = layer;
            bank.file = get_string(value, "file", where);
            if (!is_plain_file_name(bank.file))
                fail_format("{}.file: \"{}\" is not a plain file name inside the container", where, bank.file);
            bank.experts = static_cast<uint32_t>(get_unsigned(value, "experts", where, 1u << 16));
            if (static_cast<int>(bank.experts) != c.experts)
                fail_format("{}.experts: {} is not config.num_experts {}", where, bank.experts, c.experts);
            bank.bytes = get_unsigned(value, "bytes", where, max_file_offset);
            if (bank.bytes == 0) fail_format("{}.bytes: 0", where);
            if (bank.bytes % bank.experts != 0)
                fail_format("{}.bytes: {} is not a multiple of experts {}", where, bank.bytes, bank.experts);
            bank.record_bytes = bank.bytes / bank.experts;
            if (bank.record_bytes % 4096 != 0)
                fail_format("{}: record size {} is not a multiple of 4096, so it cannot be read with direct I/O",
                            where, bank.record_bytes);
            bank.codebook_base = static_cast<uint32_t>(get_unsigned(value, "codebook_base", where, 0xFFFF));
            manifest.banks[layer] = bank;
        }
    }
    for (int layer = 0; layer < c.layers; ++layer)
        if (c.is_moe_layer(layer) && !manifest.banks.count(layer)) fail_format("manifest: layers.{} is missing (MoE layer)", layer);

    auto trunk = root.find("trunk");
    if (trunk == root.end() || !trunk->is_array()) fail_format("manifest: trunk is missing or not an array");
    if (trunk->size() > 1'000'000) fail_format("manifest: trunk has {} entries, more than 1,000,000", trunk->size());
    manifest.trunk.reserve(trunk->size());
    for (size_t i = 0; i < trunk->size(); ++i) {
        TrunkTensor tensor = parse_trunk_entry((*trunk)[i], i);
        if (!manifest.trunk_by_name.emplace(tensor.name, manifest.trunk.size()).second)
            fail_format("manifest: trunk tensor {} appears twice", tensor.name);
        manifest.trunk.push_back(std::move(tensor));
    }
    return manifest;
}

void check_trunk_extents(const Manifest& manifest, uint64_t trunk_file_bytes) {
    for (const TrunkTensor& t : manifest.trunk) {
        if (t.offset > trunk_file_bytes || t.payload_bytes > trunk_file_bytes - t.offset)
            fail_format("manifest: trunk tensor {}: payload [{}, +{}) runs past the end of trunk.bin ({} bytes)", t.name,
                        t.offset, t.payload_bytes, trunk_file_bytes);
        if (t.fmt != TrunkFormat::f32 &&
            (t.scale_offset > trunk_file_bytes || t.scale_bytes > trunk_file_bytes - t.scale_offset))
            fail_format("manifest: trunk tensor {}: scales [{}, +{}) run past the end of trunk.bin ({} bytes)", t.name,
                        t.scale_offset, t.scale_bytes, trunk_file_bytes);
    }
}

void check_codebook_bases(const Manifest& manifest, uint64_t codebook_records) {
    for (const auto& [layer, bank] : manifest.banks) {
        uint64_t end = static_cast<uint64_t>(bank.codebook_base) + 3ull * manifest.quant.stages;
        if (end > codebook_records)
            fail_format("manifest: layers.{}.codebook_base {} + 3*{} stages exceeds the {} codebook records", layer,
                        bank.codebook_base, manifest.quant.stages, codebook_records);
    }
}

}  // namespace waste::format
