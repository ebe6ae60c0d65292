// trunk_codec.h — the trunk tensor encodings of container-v0 §3 (F32, Q8G,
// Q4G, Q3G with f16 group scales): dequantisation for the reader and the
// reference paths, and two ways to choose a group's scale for the writer:
// - absmax, container-v0's converter convention: scale = group absmax / 127,
//   7 or 3 (at least 1e-8); round to nearest; clamp.
// - fitted (Q4G and Q3G; Q8G keeps absmax, whose step already errs under
//   0.4%): the scale of least squared error among ±absmax / k for k on a
//   grid from qmax − 1 to −qmin + 2 in steps of 1/4 (so the largest value
//   may land on the negative end, −8 or −4, which absmax leaves unused, or be
//   clipped to buy a finer step for the rest), each candidate rounded to f16
//   before the values are rounded against it; the first of equal errors wins.
//   The same bytes any reader decodes; only the choice differs.
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

enum class TrunkScales { absmax, fitted };

// Encodes rows x cols floats into payload + scale bytes laid out as the
// reader expects (payload first, then scales, as the converter writes them).
// Returns payload_bytes + scale_bytes bytes.
std::vector<uint8_t> quantize_tensor(TrunkFormat fmt, uint32_t group, uint64_t rows, uint64_t cols,
                                     std::span<const float> values, TrunkScales scales = TrunkScales::absmax);

}  // namespace waste::format
