// safetensors.h — a bounds-checked reader of one .safetensors file.
//
// Layout (the format's own definition): an 8-byte little-endian header length
// N, N bytes of JSON `{"name": {"dtype": "BF16", "shape": [..],
// "data_offsets": [begin, end]}, ..., "__metadata__": {str: str}}`, then the
// data section; offsets are relative to the start of the data section.
//
// A shard is hostile input: the header length is bounded before anything is
// allocated, every dtype, dim, element count and extent is checked (extent =
// numel * dtype size, inside the file, no two tensors overlapping), and every
// error names the file, the tensor and the value. Reads are pread()s into the
// caller's memory — the file is never mapped, so a 15 GB shard costs no RSS.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "platform/direct_file.h"

namespace waste::convert {

// The element types a converter input may hold. Others (F64, BOOL, F8_E5M2,
// ...) are refused naming the tensor and the dtype. I64 is read only for
// compressed-tensors' `weight_shape` (other-families.md §1, INT4).
enum class Dtype : uint8_t { f32, f16, bf16, f8_e4m3, u8, i8, i32, i64 };

const char* dtype_name(Dtype dtype);  // the safetensors spelling: "F32", "BF16", "F8_E4M3", ...
size_t dtype_size(Dtype dtype);       // bytes per element

constexpr uint64_t max_header_bytes = uint64_t{100} << 20;  // 100 MiB (a K3 shard's header is ~1 MB)
constexpr size_t max_dims = 8;
constexpr int64_t max_dim = int64_t{1} << 34;              // any one dimension
constexpr uint64_t max_tensor_elements = uint64_t{1} << 40;

struct TensorEntry {
    std::string name;
    Dtype dtype = Dtype::f32;
    std::vector<int64_t> shape;  // PyTorch order; [] is a scalar (1 element)
    uint64_t numel = 0;
    uint64_t begin = 0;  // absolute byte offset in the file (data section start + data_offsets[0])
    uint64_t bytes = 0;  // numel * dtype_size
};

struct SafetensorsHeader {
    std::vector<TensorEntry> tensors;  // in the order of their offsets
    std::map<std::string, std::string> metadata;
    uint64_t data_start = 0;  // 8 + header length

    const TensorEntry* find(std::string_view name) const;  // nullptr when absent

private:
    friend SafetensorsHeader parse_safetensors_header(std::string_view, uint64_t, const std::string&);
    std::map<std::string, size_t, std::less<>> by_name_;
};

// Parses the JSON header of a file whose total size is file_bytes and whose
// header is header_json (so the data section starts at 8 + header_json.size()).
// `what` names the file in errors. Throws waste::Error (WASTE_ERR_FORMAT).
SafetensorsHeader parse_safetensors_header(std::string_view header_json, uint64_t file_bytes, const std::string& what);

// One file. Opening reads and checks the header and closes the descriptor;
// reads reopen it lazily (thread-safe) and release() closes it again, so a
// converter can delete a finished shard while still holding the object.
class SafetensorsFile {
public:
    static SafetensorsFile open(const std::filesystem::path& path);
    // A shard that `waste convert --reclaim on` deleted, rebuilt from the header
    // it saved before the delete (header_json without the 8-byte length, the
    // file's size then): names, dtypes and shapes are known. The bytes of the
    // few tiny tensors it kept (`kept`: name → bytes, e.g. an INT4 weight's
    // `_shape`, which indexing the checkpoint reads) can be read; every other
    // read fails naming the tensor and the file.
    static SafetensorsFile reclaimed(const std::filesystem::path& path, std::string_view header_json, uint64_t file_bytes,
                                     const std::map<std::string, std::string, std::less<>>& kept = {});

    SafetensorsFile(SafetensorsFile&&) noexcept;
    SafetensorsFile& operator=(SafetensorsFile&&) noexcept;
    ~SafetensorsFile();

    const std::filesystem::path& path() const { return path_; }
    uint64_t file_bytes() const { return file_bytes_; }
    const SafetensorsHeader& header() const { return header_; }
    const std::vector<TensorEntry>& tensors() const { return header_.tensors; }
    const TensorEntry* find(std::string_view name) const { return header_.find(name); }

    // Reads `bytes` raw bytes of `tensor` starting `offset` bytes into it.
    // The range must lie inside the tensor. Safe to call from several threads.
    void read(const TensorEntry& tensor, uint64_t offset, void* dst, uint64_t bytes) const;
    // Closes the descriptor (a later read reopens it and checks the size is unchanged).
    void release() const;
    bool is_reclaimed() const { return reclaimed_; }

private:
    SafetensorsFile() = default;
    const platform::DirectFile& opened() const;  // the file, reopened when released

    std::filesystem::path path_;
    uint64_t file_bytes_ = 0;
    bool reclaimed_ = false;
    std::map<std::string, std::string, std::less<>> kept_;  // a reclaimed file's readable tiny tensors
    SafetensorsHeader header_;
    struct Handle;
    std::unique_ptr<Handle> handle_;
};

}  // namespace waste::convert
