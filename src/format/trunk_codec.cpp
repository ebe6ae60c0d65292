#include "format/trunk_codec.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "format/f16.h"
#include "platform/error.h"

namespace waste::format {

void dequantize_row(const TrunkTensor& t, std::span<const uint8_t> payload, std::span<const uint8_t> scales,
                    uint64_t row, std::span<float> out) {
    WASTE_CHECK(row < t.rows && out.size() == t.cols && payload.size() == t.payload_bytes &&
                scales.size() == t.scale_bytes);
    const uint8_t* p = payload.data() + row * t.row_stride;
    if (t.fmt == TrunkFormat::f32) {
        std::memcpy(out.data(), p, t.cols * 4);
        return;
    }
    const uint8_t* s = scales.data() + row * t.groups_per_row * 2;
    for (uint64_t i = 0; i < t.cols; ++i) {
        uint16_t scale_bits;
        std::memcpy(&scale_bits, s + (i / t.group) * 2, 2);
        const float scale = f16_to_f32(scale_bits);
        int q = 0;
        switch (t.fmt) {
            case TrunkFormat::q8g: q = static_cast<int8_t>(p[i]); break;
            case TrunkFormat::q4g: q = static_cast<int>((p[i / 2] >> ((i & 1) * 4)) & 0xF) - 8; break;
            case TrunkFormat::q3g: {
                const uint64_t bit = 3 * i;
                const unsigned pair = p[bit / 8] | (static_cast<unsigned>(p[bit / 8 + 1]) << 8);  // guard byte makes +1 safe
                q = static_cast<int>((pair >> (bit % 8)) & 7u) - 4;
                break;
            }
            case TrunkFormat::f32: break;
        }
        out[i] = static_cast<float>(q) * scale;
    }
}

namespace {

// The f16 bits of the scale a group of values [x, x + n) is stored with (see trunk_codec.h).
uint16_t group_scale(const float* x, uint64_t n, int qmin, int qmax, TrunkScales rule) {
    float absmax = 0;
    for (uint64_t i = 0; i < n; ++i) absmax = std::max(absmax, std::fabs(x[i]));
    const uint16_t plain = f32_to_f16(std::max(absmax / static_cast<float>(qmax), 1e-8f));
    if (rule == TrunkScales::absmax || absmax == 0) return plain;
    const auto squared_error = [&](float stored) {
        double error = 0;
        for (uint64_t i = 0; i < n; ++i) {
            const int q = stored == 0 ? 0 : std::clamp(static_cast<int>(std::lround(x[i] / stored)), qmin, qmax);
            const double d = static_cast<double>(x[i]) - static_cast<double>(q) * stored;
            error += d * d;
        }
        return error;
    };
    uint16_t best = plain;
    double best_error = squared_error(f16_to_f32(plain));
    for (int quarter = 4 * (qmax - 1); quarter <= 4 * (-qmin + 2); ++quarter)
        for (const float sign : {1.0f, -1.0f}) {
            const uint16_t bits = f32_to_f16(std::max(absmax * 4.0f / static_cast<float>(quarter), 1e-8f) * sign);
            const float stored = f16_to_f32(bits);
            if (!std::isfinite(stored) || stored == 0) continue;
            const double error = squared_error(stored);
            if (error < best_error) best = bits, best_error = error;
        }
    return best;
}

}  // namespace

std::vector<uint8_t> quantize_tensor(TrunkFormat fmt, uint32_t group, uint64_t rows, uint64_t cols,
                                     std::span<const float> values, TrunkScales scale_rule) {
    WASTE_CHECK(values.size() == rows * cols);
    TrunkTensor t;
    t.fmt = fmt;
    t.group = group;
    t.shape = {static_cast<int64_t>(rows), static_cast<int64_t>(cols)};
    t.rows = rows;
    t.cols = cols;
    if (fmt == TrunkFormat::f32) {
        std::vector<uint8_t> bytes(rows * cols * 4);
        std::memcpy(bytes.data(), values.data(), bytes.size());
        return bytes;
    }
    const uint64_t groups = (cols + group - 1) / group;
    const uint64_t stride = fmt == TrunkFormat::q8g ? groups * group
                            : fmt == TrunkFormat::q4g ? groups * group / 2
                                                      : (3 * groups * group + 7) / 8 + 1;
    const int qmax = fmt == TrunkFormat::q8g ? 127 : fmt == TrunkFormat::q4g ? 7 : 3;
    const int qmin = fmt == TrunkFormat::q8g ? -127 : fmt == TrunkFormat::q4g ? -8 : -4;
    const TrunkScales rule = fmt == TrunkFormat::q8g ? TrunkScales::absmax : scale_rule;
    std::vector<uint8_t> bytes(rows * stride + rows * groups * 2, 0);
    uint8_t* scales = bytes.data() + rows * stride;
    for (uint64_t r = 0; r < rows; ++r) {
        uint8_t* row = bytes.data() + r * stride;
        const float* x = values.data() + r * cols;
        for (uint64_t g = 0; g < groups; ++g) {
            const uint64_t begin = g * group, end = std::min<uint64_t>(cols, begin + group);
            const uint16_t scale_bits = group_scale(x + begin, end - begin, qmin, qmax, rule);
            std::memcpy(scales + (r * groups + g) * 2, &scale_bits, 2);
            // Quantise against the scale the reader will see (after f16 rounding).
            const float stored = f16_to_f32(scale_bits);
            for (uint64_t i = begin; i < begin + group; ++i) {
                int q = 0;
                if (i < end && stored != 0)
                    q = std::clamp(static_cast<int>(std::lround(x[i] / stored)), qmin, qmax);
                if (fmt == TrunkFormat::q8g) row[i] = static_cast<uint8_t>(static_cast<int8_t>(q));
                else if (fmt == TrunkFormat::q4g) row[i / 2] |= static_cast<uint8_t>((q + 8) << ((i & 1) * 4));
                else {
                    const uint64_t bit = 3 * i;
                    const unsigned field = static_cast<unsigned>(q + 4) << (bit % 8);
                    row[bit / 8] |= static_cast<uint8_t>(field & 0xFF);
                    row[bit / 8 + 1] |= static_cast<uint8_t>(field >> 8);
                }
            }
        }
    }
    return bytes;
}

}  // namespace waste::format
