// weight_source.cpp — see weight_source.h.
#include "convert/weight_source.h"

#include "platform/error.h"

namespace waste::convert {

void read_stored_rows(const WeightSource& source, const std::string& name, uint64_t stored_cols, uint64_t first,
                      uint64_t count, std::span<float> out) {
    const std::vector<int64_t> shape = source.info(name).shape;
    const uint64_t source_cols = shape.empty() ? 1 : static_cast<uint64_t>(shape.back());
    if (source_cols == 0 || stored_cols % source_cols != 0)
        fail(WASTE_ERR_FORMAT, "checkpoint: tensor {} has rows of {} values, which do not make up stored rows of {}", name,
             source_cols, stored_cols);
    const uint64_t per_row = stored_cols / source_cols;
    source.read_rows(name, first * per_row, count * per_row, out);
}

}  // namespace waste::convert
