// trunk_tensors.h — random trunk tensors for the kernel tests, quantised as
// the converter does (format/trunk_codec.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "format/container.h"

namespace waste_test {

// One tensor's index entry and bytes (payload, then its f16 scales).
struct Trunk {
    waste::format::TrunkTensor info;
    std::vector<uint8_t> bytes;
    waste::format::LoadedTensor tensor() const;
};

// rows × cols normal values, with a wide dynamic range in the first row
// (every 7th column 30x) and one all-zero group (row 2's first), in fmt.
Trunk make_trunk(waste::format::TrunkFormat fmt, uint32_t group, size_t rows, size_t cols, std::mt19937& rng);

}  // namespace waste_test
