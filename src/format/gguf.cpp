// gguf.cpp — see gguf.h.
#include "format/gguf.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>
#include <unordered_set>

#include "platform/direct_file.h"
#include "platform/error.h"
#include "platform/native_file.h"
#include "platform/utf8_path.h"

namespace waste::format {

namespace {

constexpr uint32_t kMaxDims = 4;        // GGML_MAX_DIMS
constexpr size_t kMaxTensorName = 63;   // GGML_MAX_NAME is 64 with its NUL
constexpr uint64_t kMaxAlignment = 1ull << 30;

// The file's bytes in order, read through a window so that a header of any
// size costs a bounded buffer; every read is checked against the file's end.
class Cursor {
public:
    Cursor(uint64_t size, const GgufReadAt& read_at, std::string_view what) : size_(size), read_at_(read_at), what_(what) {}

    uint64_t position() const { return position_; }
    uint64_t remaining() const { return size_ - position_; }
    const std::string& what() const { return what_; }

    void read(void* dst, size_t bytes, std::string_view reading) {
        if (bytes > remaining())
            fail_format("{}: the file ends at byte {} in {} (it needs {} more bytes)", what_, size_, reading, bytes - remaining());
        auto* out = static_cast<uint8_t*>(dst);
        while (bytes > 0) {
            if (position_ < window_start_ || position_ >= window_start_ + window_.size()) fill();
            const size_t offset = static_cast<size_t>(position_ - window_start_);
            const size_t n = std::min(bytes, window_.size() - offset);
            std::memcpy(out, window_.data() + offset, n);
            out += n;
            bytes -= n;
            position_ += n;
        }
    }
    template <typename T>
    T scalar(std::string_view reading) {
        T value;
        read(&value, sizeof value, reading);
        return value;
    }
    void skip_to(uint64_t position) {
        if (position > size_) fail_format("{}: the data section would start at byte {}, past the file's end ({})", what_, position, size_);
        position_ = position;
    }

private:
    void fill() {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(kWindow, size_ - position_));
        window_.resize(n);
        read_at_(position_, n, window_.data());
        window_start_ = position_;
    }

    static constexpr size_t kWindow = 1 << 20;
    uint64_t size_;
    const GgufReadAt& read_at_;
    std::string what_;
    uint64_t position_ = 0;
    uint64_t window_start_ = 0;
    std::vector<uint8_t> window_;
};

class Parser {
public:
    Parser(Cursor& in, const GgufLimits& limits) : in_(in), limits_(limits) {}

    // A string whose length the file states: bounded by the limit, by the
    // bytes left, and by the metadata budget.
    std::string string(std::string_view reading) {
        const uint64_t length = in_.scalar<uint64_t>(reading);
        if (length > limits_.max_string_bytes)
            fail_format("{}: {} is a string of {} bytes; at most {} are read", in_.what(), reading, length, limits_.max_string_bytes);
        if (length > in_.remaining())
            fail_format("{}: {} is a string of {} bytes, past the file's end", in_.what(), reading, length);
        hold(length, reading);
        std::string text(static_cast<size_t>(length), '\0');
        in_.read(text.data(), text.size(), reading);
        return text;
    }

    GgufType type(std::string_view reading) {
        const uint32_t raw = in_.scalar<uint32_t>(reading);
        if (raw > static_cast<uint32_t>(GgufType::f64))
            fail_format("{}: {} has value type {}, which GGUF does not define (0–12)", in_.what(), reading, raw);
        return static_cast<GgufType>(raw);
    }

    GgufValue value(GgufType type, const std::string& key) {
        GgufValue v;
        v.type = type;
        if (type == GgufType::array) {
            v.element = this->type(key_context(key, " (its elements' type)"));
            if (v.element == GgufType::array) fail_format("{}: metadata key '{}' is an array of arrays, which is not read", in_.what(), key);
            const uint64_t count = in_.scalar<uint64_t>(key_context(key, " (its length)"));
            const uint64_t smallest = v.element == GgufType::string ? 8 : element_bytes(v.element);
            if (count > limits_.max_array_elements)
                fail_format("{}: metadata key '{}' is an array of {} elements; at most {} are read", in_.what(), key, count,
                            limits_.max_array_elements);
            if (count > in_.remaining() / smallest)
                fail_format("{}: metadata key '{}' is an array of {} elements, more than the rest of the file holds", in_.what(), key,
                            count);
            hold(count * 8, key);
            for (uint64_t i = 0; i < count; ++i) read_into(v.element, key, v);
            return v;
        }
        read_into(type, key, v);
        return v;
    }

private:
    static std::string key_context(const std::string& key, std::string_view part) {
        return "metadata key '" + key + "'" + std::string(part);
    }

    static uint64_t element_bytes(GgufType type) {
        switch (type) {
            case GgufType::u8: case GgufType::i8: case GgufType::boolean: return 1;
            case GgufType::u16: case GgufType::i16: return 2;
            case GgufType::u32: case GgufType::i32: case GgufType::f32: return 4;
            default: return 8;
        }
    }

    void hold(uint64_t bytes, std::string_view reading) {
        held_ += bytes;
        if (held_ > limits_.max_metadata_bytes)
            fail_format("{}: its metadata passes {} bytes at {}; no more is read", in_.what(), limits_.max_metadata_bytes, reading);
    }

    // One value of `type` into v: appended to its elements when v is an
    // array, else its scalar field.
    void read_into(GgufType type, const std::string& key, GgufValue& v) {
        const std::string reading = key_context(key, "");
        const bool element = v.type == GgufType::array;
        const auto integer = [&](int64_t x) {
            if (element) v.integers.push_back(x);
            else v.integer = x;
        };
        const auto real = [&](double x) {
            if (element) v.reals.push_back(x);
            else v.real = x;
        };
        switch (type) {
            case GgufType::u8: integer(in_.scalar<uint8_t>(reading)); break;
            case GgufType::i8: integer(in_.scalar<int8_t>(reading)); break;
            case GgufType::u16: integer(in_.scalar<uint16_t>(reading)); break;
            case GgufType::i16: integer(in_.scalar<int16_t>(reading)); break;
            case GgufType::u32: integer(in_.scalar<uint32_t>(reading)); break;
            case GgufType::i32: integer(in_.scalar<int32_t>(reading)); break;
            case GgufType::i64: integer(in_.scalar<int64_t>(reading)); break;
            case GgufType::u64: {
                const uint64_t u = in_.scalar<uint64_t>(reading);
                if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
                    fail_format("{}: {} holds {}, beyond what is read (2^63 - 1)", in_.what(), reading, u);
                integer(static_cast<int64_t>(u));
                break;
            }
            case GgufType::boolean: {
                const uint8_t b = in_.scalar<uint8_t>(reading);
                if (b > 1) fail_format("{}: {} is a bool of value {} (0 or 1)", in_.what(), reading, b);
                integer(b);
                break;
            }
            case GgufType::f32: real(in_.scalar<float>(reading)); break;
            case GgufType::f64: real(in_.scalar<double>(reading)); break;
            case GgufType::string: {
                std::string text = string(reading);
                if (element) v.texts.push_back(std::move(text));
                else v.text = std::move(text);
                break;
            }
            case GgufType::array: WASTE_CHECK(!"arrays are read by value()");
        }
    }

    Cursor& in_;
    const GgufLimits& limits_;
    uint64_t held_ = 0;
};

uint64_t checked_product(uint64_t a, uint64_t b, const std::string& what, const std::string& name) {
    if (b != 0 && a > std::numeric_limits<uint64_t>::max() / b)
        fail_format("{}: tensor '{}' has a shape whose size overflows 64 bits", what, name);
    return a * b;
}

}  // namespace

std::string_view gguf_type_name(GgufType type) {
    static constexpr std::string_view names[] = {"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64"};
    return names[static_cast<uint32_t>(type)];
}

bool GgufValue::is_integer() const {
    switch (type) {
        case GgufType::u8: case GgufType::i8: case GgufType::u16: case GgufType::i16:
        case GgufType::u32: case GgufType::i32: case GgufType::u64: case GgufType::i64: return true;
        default: return false;
    }
}

size_t GgufValue::count() const { return integers.size() + reals.size() + texts.size(); }

const GgufValue* GgufFile::find(std::string_view key) const {
    for (const auto& [k, v] : metadata)
        if (k == key) return &v;
    return nullptr;
}

const GgufTensor* GgufFile::tensor(std::string_view name) const {
    for (const GgufTensor& t : tensors)
        if (t.name == name) return &t;
    return nullptr;
}

namespace {

const GgufValue& required(const GgufFile& file, std::string_view key) {
    const GgufValue* v = file.find(key);
    if (!v) fail_format("{}: the key {} is missing", file.what, key);
    return *v;
}

}  // namespace

uint64_t GgufFile::require_uint(std::string_view key) const {
    const GgufValue& v = required(*this, key);
    if (!v.is_integer() || v.integer < 0)
        fail_format("{}: {} is not an unsigned integer ({})", what, key,
                    v.is_integer() ? std::to_string(v.integer) : std::string(gguf_type_name(v.type)));
    return static_cast<uint64_t>(v.integer);
}

std::optional<uint64_t> GgufFile::optional_uint(std::string_view key) const {
    return find(key) ? std::optional(require_uint(key)) : std::nullopt;
}

double GgufFile::require_real(std::string_view key) const {
    const GgufValue& v = required(*this, key);
    if (v.type == GgufType::f32 || v.type == GgufType::f64) {
        if (!std::isfinite(v.real)) fail_format("{}: {} is {}", what, key, v.real);
        return v.real;
    }
    if (v.is_integer()) return static_cast<double>(v.integer);
    fail_format("{}: {} is not a number ({})", what, key, gguf_type_name(v.type));
}

std::optional<double> GgufFile::optional_real(std::string_view key) const {
    return find(key) ? std::optional(require_real(key)) : std::nullopt;
}

std::optional<bool> GgufFile::optional_flag(std::string_view key) const {
    const GgufValue* v = find(key);
    if (!v) return std::nullopt;
    if (v->type != GgufType::boolean) fail_format("{}: {} is not a bool ({})", what, key, gguf_type_name(v->type));
    return v->integer != 0;
}

const std::string& GgufFile::require_string(std::string_view key) const {
    const GgufValue& v = required(*this, key);
    if (v.type != GgufType::string) fail_format("{}: {} is not a string ({})", what, key, gguf_type_name(v.type));
    return v.text;
}

const std::vector<std::string>& GgufFile::require_strings(std::string_view key) const {
    const GgufValue& v = required(*this, key);
    if (v.type != GgufType::array || v.element != GgufType::string)
        fail_format("{}: {} is not an array of strings", what, key);
    return v.texts;
}

const std::vector<int64_t>& GgufFile::require_integers(std::string_view key) const {
    const GgufValue& v = required(*this, key);
    if (v.type != GgufType::array || v.element == GgufType::string || v.element == GgufType::f32 ||
        v.element == GgufType::f64 || v.element == GgufType::boolean)
        fail_format("{}: {} is not an array of integers", what, key);
    return v.integers;
}

GgufFile parse_gguf(uint64_t file_size, const GgufReadAt& read_at, std::string_view what_view, const GgufLimits& limits) {
    Cursor in(file_size, read_at, what_view);
    const std::string& what = in.what();
    Parser parse(in, limits);
    GgufFile file;
    file.what = what;

    char magic[4];
    in.read(magic, 4, "the magic");
    if (std::memcmp(magic, "GGUF", 4) != 0) fail_format("{}: not a GGUF file (it does not start with 'GGUF')", what);
    file.version = in.scalar<uint32_t>("the version");
    if (file.version == 1) fail_format("{}: GGUF version 1 (files written before August 2023) is not read", what);
    if (file.version != 2 && file.version != 3) {
        if (__builtin_bswap32(file.version) == 2 || __builtin_bswap32(file.version) == 3)
            fail_format("{}: a big-endian GGUF file, which is not read", what);
        fail_format("{}: GGUF version {}; versions 2 and 3 are read", what, file.version);
    }
    const uint64_t tensor_count = in.scalar<uint64_t>("the tensor count");
    const uint64_t key_count = in.scalar<uint64_t>("the metadata count");
    // The smallest entry: a key of one byte, its type and a u8 (13 bytes);
    // a tensor: a name of one byte, no dimensions, a type and an offset (25).
    if (key_count > in.remaining() / 13)
        fail_format("{}: claims {} metadata entries, more than its {} bytes can hold", what, key_count, file_size);
    if (tensor_count > in.remaining() / 25)
        fail_format("{}: claims {} tensors, more than its {} bytes can hold", what, tensor_count, file_size);

    std::unordered_set<std::string> keys;
    file.metadata.reserve(static_cast<size_t>(key_count));
    for (uint64_t i = 0; i < key_count; ++i) {
        std::string key = parse.string(fmt::format("metadata key {}", i));
        if (key.empty()) fail_format("{}: metadata key {} is empty", what, i);
        if (!keys.insert(key).second) fail_format("{}: metadata key '{}' appears twice", what, key);
        const GgufType type = parse.type("metadata key '" + key + "'");
        GgufValue value = parse.value(type, key);
        file.metadata.emplace_back(std::move(key), std::move(value));
    }

    if (const GgufValue* alignment = file.find("general.alignment")) {
        if (alignment->type != GgufType::u32)
            fail_format("{}: general.alignment is {}, not u32", what, gguf_type_name(alignment->type));
        const uint64_t a = static_cast<uint64_t>(alignment->integer);
        if (a == 0 || !std::has_single_bit(a) || a > kMaxAlignment)
            fail_format("{}: general.alignment is {}, not a power of two up to 2^30", what, a);
        file.alignment = a;
    }

    std::unordered_set<std::string> names;
    file.tensors.reserve(static_cast<size_t>(tensor_count));
    std::vector<uint64_t> relative_offsets;
    for (uint64_t i = 0; i < tensor_count; ++i) {
        GgufTensor t;
        t.name = parse.string(fmt::format("the name of tensor {}", i));
        if (t.name.empty() || t.name.size() > kMaxTensorName)
            fail_format("{}: tensor {} has a name of {} bytes (1 to {})", what, i, t.name.size(), kMaxTensorName);
        if (!names.insert(t.name).second) fail_format("{}: tensor '{}' appears twice", what, t.name);
        const std::string context = "tensor '" + t.name + "'";
        const uint32_t dims = in.scalar<uint32_t>(context);
        if (dims > kMaxDims) fail_format("{}: tensor '{}' has {} dimensions (at most {})", what, t.name, dims, kMaxDims);
        uint64_t elements = 1;
        for (uint32_t d = 0; d < dims; ++d) {
            const uint64_t extent = in.scalar<uint64_t>(context);
            if (extent > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
                fail_format("{}: tensor '{}' has dimension {} of {}", what, t.name, d, extent);
            t.shape.push_back(extent);
            elements = checked_product(elements, extent, what, t.name);
        }
        const uint32_t type_id = in.scalar<uint32_t>(context);
        const auto type = ggml_type(type_id);
        if (!type) fail_format("{}: tensor '{}' has ggml type {}, which ggml does not define", what, t.name, type_id);
        t.type = *type;
        const uint64_t row = t.shape.empty() ? 1 : t.shape[0];
        if (row % t.type.block_elements != 0)
            fail_format("{}: tensor '{}' ({}) has rows of {} elements, not a multiple of its block ({})", what, t.name, t.type.name, row,
                        t.type.block_elements);
        t.bytes = checked_product(elements / t.type.block_elements, t.type.block_bytes, what, t.name);
        relative_offsets.push_back(in.scalar<uint64_t>(context));
        file.tensors.push_back(std::move(t));
    }

    // The data section starts at the next multiple of the alignment.
    const uint64_t a = file.alignment;
    const uint64_t position = in.position();
    file.data_offset = tensor_count == 0 ? position : position + (a - position % a) % a;
    in.skip_to(file.data_offset);
    uint64_t expected = 0;  // where table order puts the next tensor
    for (size_t i = 0; i < file.tensors.size(); ++i) {
        GgufTensor& t = file.tensors[i];
        if (relative_offsets[i] != expected)
            fail_format("{}: tensor '{}' is at data offset {}; after the tensors before it, it must be at {}", what, t.name,
                        relative_offsets[i], expected);
        // start <= file_size before the subtraction: the padding of the
        // tensors before may already reach past the end.
        const uint64_t start = file.data_offset + expected;
        if (start > file_size || t.bytes > file_size - start)
            fail_format("{}: tensor '{}' ({} bytes at byte {}) ends past the file's end ({})", what, t.name, t.bytes, start, file_size);
        t.offset = start;
        expected += t.bytes + (a - t.bytes % a) % a;  // no overflow: both are below file_size
    }
    return file;
}

GgufFile parse_gguf(std::span<const uint8_t> file, std::string_view what, const GgufLimits& limits) {
    return parse_gguf(
        file.size(), [&](uint64_t offset, size_t bytes, uint8_t* dst) { std::memcpy(dst, file.data() + offset, bytes); }, what, limits);
}

GgufFile read_gguf(const std::string& path, const GgufLimits& limits) {
    const platform::OpenedFile opened = platform::open_for_reading(path, false);
    struct Closer {
        platform::NativeFile file;
        ~Closer() { platform::close_native_file(file); }
    } closer{opened.file};
    const uint64_t size = platform::native_file_size(opened.file, path);
    const auto read_at = [&](uint64_t offset, size_t bytes, uint8_t* dst) {
        while (bytes > 0) {
            int error = 0;
            const int64_t got = platform::read_at_offset(opened.file, dst, bytes, offset, &error);
            if (got < 0) fail(WASTE_ERR_IO, "{}: reading {} bytes at {} failed: {}", path, bytes, offset, platform::system_error_text(error));
            if (got == 0) fail(WASTE_ERR_IO, "{}: the file ended at byte {} while it was read (truncated meanwhile?)", path, offset);
            dst += got;
            offset += static_cast<uint64_t>(got);
            bytes -= static_cast<size_t>(got);
        }
    };
    return parse_gguf(size, read_at, path, limits);
}

bool has_gguf_magic(const std::string& path) {
    std::error_code error;
    const std::filesystem::path p = platform::utf8_path(path);
    if (!std::filesystem::is_regular_file(p, error)) return false;
    const platform::DirectFile file(path, false);
    if (file.size() < 4) return false;
    uint8_t magic[4] = {};
    file.read_at(0, magic);
    return std::string_view(reinterpret_cast<const char*>(magic), 4) == "GGUF";
}

}  // namespace waste::format
