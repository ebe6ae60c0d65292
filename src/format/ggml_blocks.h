// ggml_blocks.h — the tensor types a GGUF file stores (ggml's type ids),
// their block geometry, and rows of them decoded to f32.
//
// Every id llama.cpp v0.4.0 knows has an entry, so a file's tensor table is
// sized and checked whatever it holds; the ids ggml removed (4, 5, 31–33,
// 36–38) and those past the last are unknown. Of the known types, those
// `decodable` here are decoded to f32 bit for bit as ggml's own
// dequantize_row_* does (tests/ggml_blocks_test.cpp checks every one against
// the library itself): the products in ggml's order, rounded to f32 one by
// one, never fused into an FMA (this file is compiled with
// -ffp-contract=off). The rest (IQ1/IQ2/IQ3, the ternary and NVFP4 types,
// Q8_1/Q8_K, integers) are named in a refusal.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace waste::format {

struct GgmlType {
    uint32_t id;
    std::string_view name;  // ggml's: "q4_K", "iq4_xs", "bf16", ...
    uint32_t block_elements;
    uint32_t block_bytes;
    bool decodable;  // dequantize_ggml_row decodes it
};

// The type of ggml id `id`, or nullopt for an id ggml does not define (any more).
std::optional<GgmlType> ggml_type(uint32_t id);

// Decodes `elements` values (a multiple of the type's block_elements) from
// `blocks` into `out`. A type that is not decodable is refused (WASTE_ERR_FORMAT,
// naming it).
void dequantize_ggml_row(const GgmlType& type, const uint8_t* blocks, float* out, size_t elements);

}  // namespace waste::format
