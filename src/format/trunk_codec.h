// trunk_codec.h — the trunk tensor encodings of container-v0 §3 (F32, Q8G,
// Q4G, Q3G with f16 group scales): dequantisation for the reader and the
// reference paths, and the converter convention for the writer (scale =
// group absmax / 127, 7 or 3, at least 1e-8; round to nearest; clamp).
//
// Rows are padded to a whole number of groups with quantised zeros.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "format/manifest.h"

namespace waste::format {

// Dequantises row `row` of a tensor whose payload and scale bytes are given
// (payload: the tensor's payload_bytes; scales: its scale_bytes, f16).
void dequantize_row(const TrunkTensor& tensor, std::span<const uint8_t> payload, std::span<const uint8_t> scales,
                    uint64_t row, std::span<float> out);

// Encodes rows x cols floats into payload + scale bytes laid out as the
// reader expects (payload first, then scales, as the converter writes them).
// Returns payload_bytes + scale_bytes bytes.
std::vector<uint8_t> quantize_tensor(TrunkFormat fmt, uint32_t group, uint64_t rows, uint64_t cols,
                                     std::span<const float> values);

}  // namespace waste::format
