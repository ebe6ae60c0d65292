// gguf_fuzz.cpp — libFuzzer target over the GGUF header reader
// (format/gguf.h) and the block decoders (format/ggml_blocks.h).
//
// The input is a whole GGUF file. It is parsed with limits small enough
// that a run never holds more than a few MiB; only waste::Error may come
// out. When it parses, every tensor of a decodable type has its first rows
// (up to 4,096 values) decoded from the input's bytes, which the reader
// promised lie inside the file.
// Seeds: fuzz/seeds/gguf_fuzz/ (a file llama.cpp's gguf-py wrote with every
// value type and ten tensor types: tools/llama-cpp/gguf_oracle.py).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "format/gguf.h"
#include "platform/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace waste::format;
    GgufLimits limits;
    limits.max_string_bytes = 1 << 16;
    limits.max_array_elements = 1 << 16;
    limits.max_metadata_bytes = 4 << 20;
    try {
        const GgufFile file = parse_gguf(std::span<const uint8_t>(data, size), "fuzz.gguf", limits);
        std::vector<float> values;
        for (const GgufTensor& t : file.tensors) {
            if (!t.type.decodable || t.bytes == 0) continue;
            const uint64_t elements = t.bytes / t.type.block_bytes * t.type.block_elements;
            const uint64_t decoded = std::min<uint64_t>(elements, 4096) / t.type.block_elements * t.type.block_elements;
            if (t.offset + decoded / t.type.block_elements * t.type.block_bytes > size) __builtin_trap();  // the reader's promise
            values.resize(decoded);
            dequantize_ggml_row(t.type, data + t.offset, values.data(), decoded);
        }
    } catch (const waste::Error&) {
    }
    return 0;
}
