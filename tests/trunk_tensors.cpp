#include "trunk_tensors.h"

#include <algorithm>

#include "format/manifest.h"
#include "format/trunk_codec.h"

namespace waste_test {

using namespace waste;

format::LoadedTensor Trunk::tensor() const {
    return format::LoadedTensor{&info, std::span<const uint8_t>(bytes.data(), info.payload_bytes),
                                std::span<const uint8_t>(bytes.data() + info.payload_bytes, info.scale_bytes)};
}

Trunk make_trunk(format::TrunkFormat fmt, uint32_t group, size_t rows, size_t cols, std::mt19937& rng) {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> values(rows * cols);
    for (float& v : values) v = normal(rng);
    for (size_t c = 0; c < cols; c += 7) values[c] *= 30.0f;
    if (rows > 2) std::fill(values.begin() + 2 * cols, values.begin() + 2 * cols + std::min<size_t>(cols, group), 0.0f);
    Trunk t;
    t.bytes = format::quantize_tensor(fmt, group, rows, cols, values);
    t.info.name = "test";
    t.info.fmt = fmt;
    t.info.group = group;
    t.info.shape = {static_cast<int64_t>(rows), static_cast<int64_t>(cols)};
    t.info.bytes = t.bytes.size();
    format::derive_trunk_layout(t.info, "test");
    return t;
}

}  // namespace waste_test
