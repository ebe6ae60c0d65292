// gguf.h — a GGUF file's header: its version, its metadata (key → value, in
// file order) and its tensor table, read from a file nobody vouches for
// (docs/GGUF.md). Layout facts: llama.cpp v0.4.0's gguf.cpp and gguf-py.
//
// Contract: nothing is allocated that the file dictates beyond what its own
// bytes hold and GgufLimits allow; every count, length, shape and offset is
// checked before use; a refusal is WASTE_ERR_FORMAT naming the file, the key
// or tensor, and the value. As llama.cpp requires, tensors lie in the data
// section in table order, each at the end of the one before it padded to
// the alignment (so none overlaps another), and each inside the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "format/ggml_blocks.h"

namespace waste::format {

enum class GgufType : uint32_t { u8, i8, u16, i16, u32, i32, f32, boolean, string, array, u64, i64, f64 };
std::string_view gguf_type_name(GgufType type);

struct GgufValue {
    GgufType type = GgufType::u8;
    GgufType element = GgufType::u8;  // an array's elements' type
    int64_t integer = 0;              // the integer types and bool (a u64 above INT64_MAX is refused)
    double real = 0;                  // f32, f64
    std::string text;                 // string
    // An array's elements, in whichever of these its element type uses.
    std::vector<int64_t> integers;
    std::vector<double> reals;
    std::vector<std::string> texts;

    bool is_integer() const;  // u8 … i64 (not bool)
    size_t count() const;     // an array's length
};

struct GgufTensor {
    std::string name;
    std::vector<uint64_t> shape;  // ggml's ne: the row (contiguous) first
    GgmlType type;
    uint64_t offset = 0;  // of its first byte, from the file's start
    uint64_t bytes = 0;
};

struct GgufLimits {
    uint64_t max_string_bytes = 64ull << 20;      // one string (chat templates are ~10 KB)
    uint64_t max_array_elements = 1ull << 25;     // one array (vocabularies: ~10^5–10^6)
    uint64_t max_metadata_bytes = 1ull << 30;     // every string and array element held
};

struct GgufFile {
    std::string what;  // names the file in refusals (parse_gguf's `what`)
    uint32_t version = 0;
    uint64_t alignment = 32;
    uint64_t data_offset = 0;  // where the data section starts
    std::vector<std::pair<std::string, GgufValue>> metadata;
    std::vector<GgufTensor> tensors;

    const GgufValue* find(std::string_view key) const;  // nullptr when absent
    const GgufTensor* tensor(std::string_view name) const;
    // A key's value as its kind: refused (WASTE_ERR_FORMAT, naming the file,
    // the key and what it holds) when absent (require_*) or of another kind.
    // A number is an integer or a finite float; a flag a bool.
    uint64_t require_uint(std::string_view key) const;
    std::optional<uint64_t> optional_uint(std::string_view key) const;
    double require_real(std::string_view key) const;
    std::optional<double> optional_real(std::string_view key) const;
    std::optional<bool> optional_flag(std::string_view key) const;
    const std::string& require_string(std::string_view key) const;
    const std::vector<std::string>& require_strings(std::string_view key) const;  // an array of strings
    const std::vector<int64_t>& require_integers(std::string_view key) const;     // an array of integers
};

// Fills `bytes` bytes at `offset` of the file into dst, or throws.
using GgufReadAt = std::function<void(uint64_t offset, size_t bytes, uint8_t* dst)>;

// `what` names the file in refusals.
GgufFile parse_gguf(uint64_t file_size, const GgufReadAt& read_at, std::string_view what, const GgufLimits& limits = {});
GgufFile parse_gguf(std::span<const uint8_t> file, std::string_view what, const GgufLimits& limits = {});
GgufFile read_gguf(const std::string& path, const GgufLimits& limits = {});

// True when `path` is a regular file that starts with GGUF's magic.
bool has_gguf_magic(const std::string& path);

}  // namespace waste::format
