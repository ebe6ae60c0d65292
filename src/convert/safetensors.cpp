#include "convert/safetensors.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "platform/direct_file.h"
#include "platform/error.h"
#include "platform/utf8_path.h"

namespace waste::convert {
namespace {

using nlohmann::json;

struct DtypeSpelling {
    const char* name;
    Dtype dtype;
    size_t size;
};

constexpr DtypeSpelling dtype_table[] = {
    {"F32", Dtype::f32, 4},    {"F16", Dtype::f16, 2}, {"BF16", Dtype::bf16, 2}, {"F8_E4M3", Dtype::f8_e4m3, 1},
    {"U8", Dtype::u8, 1},      {"I8", Dtype::i8, 1},   {"I32", Dtype::i32, 4},   {"I64", Dtype::i64, 8},
};

// JSON nesting of a valid header: {name: {"shape": [dim]}} is three levels deep.
constexpr int max_json_depth = 3;

std::string shorten(const std::string& text) {
    constexpr size_t limit = 80;
    return text.size() <= limit ? text : text.substr(0, limit) + "...";
}


uint64_t unsigned_value(const json& value, const std::string& what, const std::string& tensor, const char* field) {
    if (!value.is_number_unsigned() && !(value.is_number_integer() && value.get<int64_t>() >= 0))
        fail_format("{}: tensor \"{}\": {} must be a non-negative integer, got {}", what, shorten(tensor), field,
                    shorten(value.dump()));
    return value.get<uint64_t>();
}

TensorEntry parse_entry(const std::string& name, const json& spec, uint64_t data_bytes, uint64_t data_start,
                        const std::string& what) {
    const std::string shown = shorten(name);
    if (name.empty()) fail_format("{}: a tensor has an empty name", what);
    if (!spec.is_object()) fail_format("{}: tensor \"{}\": expected an object, got {}", what, shown, shorten(spec.dump()));
    for (const char* key : {"dtype", "shape", "data_offsets"})
        if (!spec.contains(key)) fail_format("{}: tensor \"{}\" has no \"{}\"", what, shown, key);
    TensorEntry t;
    t.name = name;

    const json& dtype = spec["dtype"];
    if (!dtype.is_string()) fail_format("{}: tensor \"{}\": dtype must be a string, got {}", what, shown, shorten(dtype.dump()));
    const std::string dtype_text = dtype.get<std::string>();
    const DtypeSpelling* spelling = nullptr;
    for (const DtypeSpelling& s : dtype_table)
        if (dtype_text == s.name) spelling = &s;
    if (!spelling)
        fail_format("{}: tensor \"{}\" has dtype \"{}\", which the converter does not read "
                    "(F32, F16, BF16, F8_E4M3, U8, I8, I32, I64)",
                    what, shown, shorten(dtype_text));
    t.dtype = spelling->dtype;

    const json& shape = spec["shape"];
    if (!shape.is_array()) fail_format("{}: tensor \"{}\": shape must be an array, got {}", what, shown, shorten(shape.dump()));
    if (shape.size() > max_dims)
        fail_format("{}: tensor \"{}\" has {} dimensions (at most {})", what, shown, shape.size(), max_dims);
    uint64_t numel = 1;
    for (const json& dim : shape) {
        const uint64_t d = unsigned_value(dim, what, name, "every shape dimension");
        if (d > static_cast<uint64_t>(max_dim))
            fail_format("{}: tensor \"{}\" has dimension {} (at most {})", what, shown, d, max_dim);
        if (d != 0 && numel > max_tensor_elements / d)
            fail_format("{}: tensor \"{}\" shape {} has more than {} elements", what, shown, shorten(shape.dump()),
                        max_tensor_elements);
        numel *= d;
        t.shape.push_back(static_cast<int64_t>(d));
    }
    t.numel = numel;
    t.bytes = numel * spelling->size;

    const json& offsets = spec["data_offsets"];
    if (!offsets.is_array() || offsets.size() != 2)
        fail_format("{}: tensor \"{}\": data_offsets must be [begin, end], got {}", what, shown, shorten(offsets.dump()));
    const uint64_t begin = unsigned_value(offsets[0], what, name, "data_offsets[0]");
    const uint64_t end = unsigned_value(offsets[1], what, name, "data_offsets[1]");
    if (end < begin) fail_format("{}: tensor \"{}\": data_offsets [{}, {}] end before begin", what, shown, begin, end);
    if (end > data_bytes)
        fail_format("{}: tensor \"{}\": data_offsets end {} is past the end of the data section ({} bytes; file "
                    "truncated?)",
                    what, shown, end, data_bytes);
    if (end - begin != t.bytes)
        fail_format("{}: tensor \"{}\": data_offsets [{}, {}] hold {} bytes, but {} shape {} needs {}", what, shown,
                    begin, end, end - begin, spelling->name, shorten(shape.dump()), t.bytes);
    t.begin = data_start + begin;
    return t;
}

}  // namespace

const char* dtype_name(Dtype dtype) {
    for (const DtypeSpelling& s : dtype_table)
        if (s.dtype == dtype) return s.name;
    return "?";
}

size_t dtype_size(Dtype dtype) {
    for (const DtypeSpelling& s : dtype_table)
        if (s.dtype == dtype) return s.size;
    return 0;
}

const TensorEntry* SafetensorsHeader::find(std::string_view name) const {
    auto it = by_name_.find(name);
    return it == by_name_.end() ? nullptr : &tensors[it->second];
}

SafetensorsHeader parse_safetensors_header(std::string_view header_json, uint64_t file_bytes, const std::string& what) {
    SafetensorsHeader header;
    header.data_start = 8 + static_cast<uint64_t>(header_json.size());
    if (header_json.size() > max_header_bytes)
        fail_format("{}: header of {} bytes exceeds the {} byte limit", what, header_json.size(), max_header_bytes);
    if (header.data_start > file_bytes)
        fail_format("{}: header of {} bytes runs past the end of the {} byte file", what, header_json.size(), file_bytes);
    const uint64_t data_bytes = file_bytes - header.data_start;

    // Duplicate keys would silently keep the last one; nesting is bounded so a
    // hostile header cannot make the parser build a deep tree.
    std::set<std::string, std::less<>> seen;
    json::parser_callback_t guard = [&](int depth, json::parse_event_t event, json& parsed) {
        if (depth > max_json_depth)
            fail_format("{}: header JSON nests deeper than a safetensors header ({} levels)", what, max_json_depth);
        if (depth == 1 && event == json::parse_event_t::key && parsed.is_string()) {
            if (!seen.insert(parsed.get<std::string>()).second)
                fail_format("{}: header names tensor \"{}\" twice", what, shorten(parsed.get<std::string>()));
        }
        return true;
    };
    json root;
    try {
        root = json::parse(header_json.begin(), header_json.end(), guard);
    } catch (const json::exception& e) {
        fail_format("{}: header is not valid JSON: {}", what, e.what());
    }
    if (!root.is_object()) fail_format("{}: header must be a JSON object, got {}", what, shorten(root.dump()));

    for (auto it = root.begin(); it != root.end(); ++it) {
        if (it.key() == "__metadata__") {
            if (!it.value().is_object())
                fail_format("{}: __metadata__ must be an object of strings, got {}", what, shorten(it.value().dump()));
            for (auto m = it.value().begin(); m != it.value().end(); ++m) {
                if (!m.value().is_string())
                    fail_format("{}: __metadata__ \"{}\" must be a string, got {}", what, shorten(m.key()),
                                shorten(m.value().dump()));
                header.metadata[m.key()] = m.value().get<std::string>();
            }
            continue;
        }
        header.tensors.push_back(parse_entry(it.key(), it.value(), data_bytes, header.data_start, what));
    }

    // No two tensors may share bytes (empty tensors occupy none).
    std::sort(header.tensors.begin(), header.tensors.end(), [](const TensorEntry& a, const TensorEntry& b) {
        return a.begin != b.begin ? a.begin < b.begin : a.name < b.name;
    });
    const TensorEntry* previous = nullptr;
    for (const TensorEntry& t : header.tensors) {
        if (t.bytes == 0) continue;
        if (previous && t.begin < previous->begin + previous->bytes)
            fail_format("{}: tensors \"{}\" [{}, {}) and \"{}\" [{}, {}) overlap", what, shorten(previous->name),
                        previous->begin - header.data_start, previous->begin + previous->bytes - header.data_start,
                        shorten(t.name), t.begin - header.data_start, t.begin + t.bytes - header.data_start);
        previous = &t;
    }
    for (size_t i = 0; i < header.tensors.size(); ++i) header.by_name_.emplace(header.tensors[i].name, i);
    return header;
}

// ---------------------------------------------------------------------------

struct SafetensorsFile::Handle {
    std::mutex mutex;
    std::optional<platform::DirectFile> file;  // open between the first read and release()
};

SafetensorsFile::SafetensorsFile(SafetensorsFile&&) noexcept = default;
SafetensorsFile& SafetensorsFile::operator=(SafetensorsFile&&) noexcept = default;
SafetensorsFile::~SafetensorsFile() = default;

SafetensorsFile SafetensorsFile::open(const std::filesystem::path& path) {
    SafetensorsFile file;
    file.path_ = path;
    file.handle_ = std::make_unique<Handle>();
    const std::string what = platform::utf8_text(path);
    const platform::DirectFile source(what, false);  // closed on return: reads reopen it (opened())
    const uint64_t size = source.size();
    if (size < 8) fail_format("{}: {} bytes is too short for a safetensors header length", what, size);
    unsigned char length_bytes[8];
    source.read_at(0, length_bytes);
    uint64_t length = 0;
    for (int i = 7; i >= 0; --i) length = (length << 8) | length_bytes[i];
    if (length > max_header_bytes)
        fail_format("{}: header length {} exceeds the {} byte limit", what, length, max_header_bytes);
    if (length > size - 8)
        fail_format("{}: header length {} runs past the end of the {} byte file (truncated?)", what, length, size);
    std::string text(static_cast<size_t>(length), '\0');
    source.read_at(8, {reinterpret_cast<uint8_t*>(text.data()), text.size()});
    file.header_ = parse_safetensors_header(text, size, what);
    file.file_bytes_ = size;
    return file;
}

SafetensorsFile SafetensorsFile::reclaimed(const std::filesystem::path& path, std::string_view header_json,
                                           uint64_t file_bytes, const std::map<std::string, std::string, std::less<>>& kept) {
    SafetensorsFile file;
    file.path_ = path;
    file.handle_ = std::make_unique<Handle>();
    if (header_json.size() > max_header_bytes || file_bytes < 8)
        fail_format("{}: recorded header of {} bytes for a {} byte file is not a safetensors header", platform::utf8_text(path),
                    header_json.size(), file_bytes);
    file.header_ = parse_safetensors_header(header_json, file_bytes, platform::utf8_text(path) + " (reclaimed, recorded header)");
    file.file_bytes_ = file_bytes;
    file.reclaimed_ = true;
    for (const auto& [name, bytes] : kept) {
        const TensorEntry* entry = file.header_.find(name);
        if (!entry || entry->bytes != bytes.size())
            fail_format("{}: kept bytes of tensor \"{}\" ({} bytes) do not match its recorded header", platform::utf8_text(path), name,
                        bytes.size());
    }
    file.kept_ = kept;
    return file;
}

const platform::DirectFile& SafetensorsFile::opened() const {
    std::lock_guard<std::mutex> lock(handle_->mutex);
    if (reclaimed_) fail(WASTE_ERR_IO, "{}: was reclaimed (deleted by convert --reclaim on); its tensors cannot be read", platform::utf8_text(path_));
    if (!handle_->file) {
        platform::DirectFile file(platform::utf8_text(path_), false);
        if (file.size() != file_bytes_)
            fail(WASTE_ERR_IO, "{}: changed size since it was opened ({} -> {} bytes)", platform::utf8_text(path_), file_bytes_, file.size());
        handle_->file.emplace(std::move(file));
    }
    return *handle_->file;
}

void SafetensorsFile::release() const {
    std::lock_guard<std::mutex> lock(handle_->mutex);
    handle_->file.reset();
}

void SafetensorsFile::read(const TensorEntry& tensor, uint64_t offset, void* dst, uint64_t bytes) const {
    if (offset > tensor.bytes || bytes > tensor.bytes - offset)
        fail(WASTE_ERR_INVALID_ARGUMENT, "{}: read of {} bytes at {} is outside tensor \"{}\" ({} bytes)", platform::utf8_text(path_),
             bytes, offset, tensor.name, tensor.bytes);
    if (bytes == 0) return;
    if (reclaimed_) {
        const auto kept = kept_.find(tensor.name);
        if (kept == kept_.end())
            fail(WASTE_ERR_IO, "{}: tensor \"{}\" cannot be read: the shard was reclaimed (deleted by convert --reclaim on)",
                 platform::utf8_text(path_), tensor.name);
        std::memcpy(dst, kept->second.data() + offset, bytes);
        return;
    }
    const platform::DirectFile& file = opened();
    file.read_at(tensor.begin + offset, {static_cast<uint8_t*>(dst), static_cast<size_t>(bytes)});
    // A conversion reads every byte once: when a read reaches the end of a
    // large tensor, drop the tensor from the page cache so a 1.4 TB
    // checkpoint does not crowd out everything else (advice only; a failure
    // changes nothing, and a later read simply goes to the disk again).
    if (offset + bytes == tensor.bytes && tensor.bytes >= (uint64_t{1} << 20))
        platform::drop_cached_pages(file.native(), tensor.begin, tensor.bytes);
}

}  // namespace waste::convert
