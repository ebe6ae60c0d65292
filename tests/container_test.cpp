// container_test.cpp — the v0 reader against the upstream fixtures, and the
// small codecs it is built on (f16, Q8G/Q4G/Q3G, CRC-32, cgroup parsing).
//
// Hostile and damaged containers are hostile_test.cpp's; this file checks
// that well-formed input reads back exactly as container-v0.md says.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "format/container.h"
#include "format/f16.h"
#include "format/trunk_codec.h"
#include "model/model_summary.h"
#include "platform/aligned_buffer.h"
#include "platform/crc32.h"
#include "platform/error.h"
#include "platform/memory_info.h"
#include "test_support.h"
#include "waste/waste.h"

namespace {

using nlohmann::json;
using waste::format::Container;
using waste::format::ContainerOptions;
using waste::format::TrunkFormat;
using waste::format::TrunkTensor;
using waste_test::fixture;

const char* const fixture_names[] = {"tiny", "tiny-tok", "tiny-prefix"};

std::string container_path(const std::string& name) { return fixture(name + ".waste").string(); }

class FixtureTest : public ::testing::TestWithParam<const char*> {};

INSTANTIATE_TEST_SUITE_P(Upstream, FixtureTest, ::testing::ValuesIn(fixture_names),
                         [](const auto& info) {
                             std::string name = info.param;
                             for (char& c : name)
                                 if (c == '-') c = '_';
                             return name;
                         });

TEST_P(FixtureTest, OpensAndLoadsTrunk) {
    auto container = Container::open(container_path(GetParam()), ContainerOptions{});
    ASSERT_TRUE(container);
    const auto& c = container->config();
    EXPECT_EQ(c.layers, 4);
    EXPECT_EQ(c.hidden, 128);
    EXPECT_EQ(c.experts, 8);
    EXPECT_EQ(container->manifest().banks.size(), 3u);  // layers 1..3 are MoE, layer 0 dense
    EXPECT_EQ(container->codebook_records(), 27u);      // 3 layers x 3 kinds x 3 stages
    EXPECT_EQ(container->expert_layout().record_bytes, 12288u);
    EXPECT_FALSE(container->trunk_loaded());
    container->load_trunk();
    EXPECT_TRUE(container->trunk_loaded());
    EXPECT_NE(container->tensor("model.norm.weight"), nullptr);
    EXPECT_NE(container->tensor("lm_head.weight"), nullptr);
    EXPECT_EQ(container->tensor("model.no_such_tensor.weight"), nullptr);
}

TEST_P(FixtureTest, OpensThroughTheApiWithAndWithoutMetadataOnly) {
    for (uint32_t flags : {0u, static_cast<uint32_t>(WASTE_OPEN_METADATA_ONLY),
                           static_cast<uint32_t>(WASTE_OPEN_VERIFY_CHECKSUMS | WASTE_OPEN_BUFFERED_IO)}) {
        SCOPED_TRACE(flags);
        waste_open_options options;
        waste_open_options_init(&options);
        options.flags = flags;
        waste_model* model = nullptr;
        waste_error error{};
        ASSERT_EQ(waste_model_open(container_path(GetParam()).c_str(), &options, &model, &error), WASTE_OK)
            << error.message;
        ASSERT_NE(model, nullptr);
        EXPECT_EQ(error.status, WASTE_OK);
        waste_model_close(model);
    }
}

TEST_P(FixtureTest, InfoAgreesWithUpstream) {
    const json upstream = json::parse(waste_test::read_file(fixture(std::string(GetParam()) + ".info.json")));
    waste_open_options options;
    waste_open_options_init(&options);
    options.flags = WASTE_OPEN_METADATA_ONLY;
    waste_model* model = nullptr;
    waste_error error{};
    ASSERT_EQ(waste_model_open(container_path(GetParam()).c_str(), &options, &model, &error), WASTE_OK) << error.message;
    char* text = nullptr;
    ASSERT_EQ(waste_model_info_json(model, &text, &error), WASTE_OK) << error.message;
    const json ours = json::parse(text);
    waste_string_free(text);
    waste_model_close(model);
    // Parameter counts are properties of the container (fixtures README): exact.
    for (const char* key : {"layers", "experts", "top_k", "hidden", "params_total", "params_active"}) {
        SCOPED_TRACE(key);
        ASSERT_TRUE(ours.contains(key));
        EXPECT_EQ(ours[key].get<uint64_t>(), upstream.at(key).get<uint64_t>());
    }
    EXPECT_EQ(ours["arch"], upstream["arch"]);
    EXPECT_EQ(ours["quantization"], upstream["quantization"]);
}

TEST_P(FixtureTest, EveryRecordPassesItsChecksAndChecksum) {
    ContainerOptions options;
    options.verify_checksums = true;
    auto container = Container::open(container_path(GetParam()), options);
    ASSERT_TRUE(container->verify_checksums());
    waste::platform::AlignedBuffer record(container->expert_layout().record_bytes);
    int records = 0;
    for (const auto& [layer, bank] : container->manifest().banks) {
        for (uint32_t e = 0; e < bank.experts; ++e) {
            SCOPED_TRACE(testing::Message() << "expert " << e << " of layer " << layer);
            ASSERT_NO_THROW(container->read_expert(layer, static_cast<int>(e), record.span()));
            ASSERT_NO_THROW(waste::format::verify_expert_checksum(record.span(), layer, static_cast<int>(e),
                                                                  container->expert_layout()));
            const auto header = waste::format::decode_expert_header(record.data());
            EXPECT_EQ(header.layer, layer);
            EXPECT_EQ(header.expert, e);
            EXPECT_EQ(header.codebook_id, bank.codebook_base);
            ++records;
        }
    }
    EXPECT_EQ(records, 24);
}

TEST_P(FixtureTest, ApiVerifyPasses) {
    waste_open_options options;
    waste_open_options_init(&options);
    options.flags = WASTE_OPEN_METADATA_ONLY | WASTE_OPEN_VERIFY_CHECKSUMS;
    waste_model* model = nullptr;
    waste_error error{};
    ASSERT_EQ(waste_model_open(container_path(GetParam()).c_str(), &options, &model, &error), WASTE_OK) << error.message;
    auto progress = [](uint64_t done, uint64_t total, void* user) -> int {
        auto* seen = static_cast<uint64_t*>(user);
        seen[0] = done;
        seen[1] = total;
        return 0;
    };
    uint64_t seen[2] = {0, 0};
    EXPECT_EQ(waste_model_verify(model, progress, seen, &error), WASTE_OK) << error.message;
    EXPECT_EQ(seen[0], 24u);  // 3 MoE layers x 8 experts
    EXPECT_EQ(seen[1], 24u);
    waste_model_close(model);
}

TEST_P(FixtureTest, TrunkDequantises) {
    auto container = Container::open(container_path(GetParam()), ContainerOptions{});
    container->load_trunk();
    const auto& c = container->config();
    // F32 norm weights: every value finite.
    for (const std::string name : {"model.norm.weight", "model.layers.0.input_layernorm.weight",
                                   "model.layers.3.post_attention_layernorm.weight"}) {
        SCOPED_TRACE(name);
        const auto& tensor = container->require(name);
        EXPECT_EQ(tensor.info->fmt, TrunkFormat::f32);
        const std::vector<float> values = tensor.dequantize();
        ASSERT_EQ(values.size(), static_cast<size_t>(c.hidden));
        for (float v : values) EXPECT_TRUE(std::isfinite(v));
    }
    // Q8G embedding: rows of `hidden` values, and row r equals int8 * f16 scale
    // recomputed here straight from trunk.bin's bytes.
    const auto& embed = container->require("model.embed_tokens.weight");
    ASSERT_EQ(embed.info->fmt, TrunkFormat::q8g);
    ASSERT_EQ(embed.info->rows, static_cast<uint64_t>(c.vocab));
    ASSERT_EQ(embed.info->cols, static_cast<uint64_t>(c.hidden));
    const std::string trunk = waste_test::read_file(fixture(std::string(GetParam()) + ".waste/trunk.bin"));
    std::vector<float> row(c.hidden);
    for (uint64_t r : {uint64_t{0}, uint64_t{1}, embed.info->rows - 1}) {
        SCOPED_TRACE(r);
        embed.row(r, row);
        const uint64_t groups = embed.info->groups_per_row;
        for (int i = 0; i < c.hidden; ++i) {
            const int8_t q = static_cast<int8_t>(trunk[embed.info->offset + r * embed.info->row_stride + i]);
            uint16_t bits;
            std::memcpy(&bits, trunk.data() + embed.info->scale_offset + (r * groups + i / embed.info->group) * 2, 2);
            const float expected = static_cast<float>(q) * waste::format::f16_to_f32(bits);
            ASSERT_EQ(row[i], expected) << "column " << i;  // one exact product either way
        }
    }
    // Q4G: a whole tensor dequantises to finite values.
    const auto& q_proj = container->require("model.layers.0.self_attn.q_proj.weight");
    ASSERT_EQ(q_proj.info->fmt, TrunkFormat::q4g);
    for (float v : q_proj.dequantize()) ASSERT_TRUE(std::isfinite(v));
    EXPECT_THROW(embed.row(embed.info->rows, row), waste::Error);
}

TEST(Container, TinyPrefixSkipsTheTensorOutsideThePrefix) {
    auto container = Container::open(container_path("tiny-prefix"), ContainerOptions{});
    const auto& m = container->manifest();
    EXPECT_EQ(m.tensor_prefix, "language_model.");
    const TrunkTensor* vision = m.find("vision_tower.encoder.layers.0.fc0.weight");
    ASSERT_NE(vision, nullptr);
    EXPECT_FALSE(container->is_text_tensor(*vision));
    ASSERT_NE(m.find("language_model.model.norm.weight"), nullptr);
    EXPECT_TRUE(container->is_text_tensor(*m.find("language_model.model.norm.weight")));
    container->load_trunk();
    EXPECT_NE(container->tensor("model.norm.weight"), nullptr);
    EXPECT_EQ(container->tensor("vision_tower.encoder.layers.0.fc0.weight"), nullptr);
    // The same text model as tiny.waste: the extra tensor adds no parameters.
    auto plain = Container::open(container_path("tiny"), ContainerOptions{});
    EXPECT_EQ(waste::model::summarize(*container).params_trunk, waste::model::summarize(*plain).params_trunk);
    EXPECT_EQ(container->resident_trunk_bytes(), plain->resident_trunk_bytes());
}

// ------------------------------------------------------------------ f16

TEST(F16, EveryNonNanCodeRoundTrips) {
    int checked = 0;
    for (uint32_t code = 0; code < 65536; ++code) {
        const uint16_t half = static_cast<uint16_t>(code);
        const bool nan = (half & 0x7C00) == 0x7C00 && (half & 0x03FF) != 0;
        if (nan) {
            EXPECT_TRUE(std::isnan(waste::format::f16_to_f32(half)));
            continue;
        }
        const float value = waste::format::f16_to_f32(half);
        ASSERT_EQ(waste::format::f32_to_f16(value), half) << "code 0x" << std::hex << code;
        ++checked;
    }
    EXPECT_EQ(checked, 65536 - 2 * 1023);
}

TEST(F16, SubnormalsAreValuesNotZero) {
    using waste::format::f16_to_f32;
    using waste::format::f32_to_f16;
    EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));
    EXPECT_EQ(f16_to_f32(0x8001), -std::ldexp(1.0f, -24));
    EXPECT_EQ(f16_to_f32(0x03FF), 1023 * std::ldexp(1.0f, -24));  // largest subnormal
    EXPECT_EQ(f16_to_f32(0x0400), std::ldexp(1.0f, -14));         // smallest normal
    EXPECT_EQ(f16_to_f32(0x3C00), 1.0f);
    EXPECT_EQ(f16_to_f32(0x7BFF), 65504.0f);
    EXPECT_TRUE(std::isinf(f16_to_f32(0x7C00)));
    EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -24)), 0x0001);
    EXPECT_EQ(f32_to_f16(std::ldexp(3.0f, -24)), 0x0003);
    // Ties go to even: 2^-25 is half of the smallest subnormal, 3*2^-25 is 1.5 of it.
    EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);
    EXPECT_EQ(f32_to_f16(std::ldexp(3.0f, -25)), 0x0002);
    EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -26)), 0x0000);
    EXPECT_EQ(f32_to_f16(-0.0f), 0x8000);
    EXPECT_EQ(f32_to_f16(65519.0f), 0x7BFF);  // just under the rounding edge to inf
    EXPECT_EQ(f32_to_f16(65520.0f), 0x7C00);
    EXPECT_EQ(f32_to_f16(1e10f), 0x7C00);
    EXPECT_EQ(f32_to_f16(-INFINITY), 0xFC00);
    EXPECT_EQ(f32_to_f16(NAN) & 0x7C00, 0x7C00);
    EXPECT_NE(f32_to_f16(NAN) & 0x03FF, 0);
    // Normal rounding: 1 + 2^-11 is exactly between 1 and 1 + 2^-10 -> even (1).
    EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3C00);
    EXPECT_EQ(f32_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);
}

// ------------------------------------------------------------------ trunk codec

TrunkTensor make_tensor(TrunkFormat fmt, uint32_t group, uint64_t rows, uint64_t cols) {
    TrunkTensor t;
    t.name = "test";
    t.fmt = fmt;
    t.group = group;
    t.shape = {static_cast<int64_t>(rows), static_cast<int64_t>(cols)};
    // bytes as the layout needs it: derive once with a placeholder, then again.
    try {
        waste::format::derive_trunk_layout(t, "test");
    } catch (const waste::Error&) {
    }
    t.bytes = t.payload_bytes + t.scale_bytes;
    waste::format::derive_trunk_layout(t, "test");
    return t;
}

struct CodecCase {
    TrunkFormat fmt;
    uint32_t group;
    uint64_t rows, cols;
};

class TrunkCodecTest : public ::testing::TestWithParam<CodecCase> {};

INSTANTIATE_TEST_SUITE_P(
    Formats, TrunkCodecTest,
    ::testing::Values(CodecCase{TrunkFormat::q8g, 128, 5, 256}, CodecCase{TrunkFormat::q8g, 128, 3, 200},
                      CodecCase{TrunkFormat::q8g, 32, 4, 37}, CodecCase{TrunkFormat::q4g, 128, 5, 256},
                      CodecCase{TrunkFormat::q4g, 128, 3, 200}, CodecCase{TrunkFormat::q4g, 64, 2, 1},
                      CodecCase{TrunkFormat::q3g, 128, 5, 256}, CodecCase{TrunkFormat::q3g, 128, 3, 200},
                      CodecCase{TrunkFormat::q3g, 16, 4, 21}, CodecCase{TrunkFormat::f32, 128, 3, 7}),
    [](const auto& info) {
        return std::string(waste::format::trunk_format_name(info.param.fmt)) + "_g" + std::to_string(info.param.group) +
               "_" + std::to_string(info.param.rows) + "x" + std::to_string(info.param.cols);
    });

TEST_P(TrunkCodecTest, QuantizeDequantizeWithinHalfAStepPerGroup) {
    const CodecCase p = GetParam();
    std::mt19937 random(1234);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> values(p.rows * p.cols);
    for (uint64_t r = 0; r < p.rows; ++r)
        for (uint64_t i = 0; i < p.cols; ++i)  // a different magnitude per row, one all-zero row
            values[r * p.cols + i] = r == 1 ? 0.0f : normal(random) * std::ldexp(1.0f, static_cast<int>(r) * 3 - 4);
    const TrunkTensor t = make_tensor(p.fmt, p.group, p.rows, p.cols);
    const std::vector<uint8_t> bytes = waste::format::quantize_tensor(p.fmt, p.group, p.rows, p.cols, values);
    ASSERT_EQ(bytes.size(), t.payload_bytes + t.scale_bytes);
    const std::span<const uint8_t> payload(bytes.data(), t.payload_bytes);
    const std::span<const uint8_t> scales(bytes.data() + t.payload_bytes, t.scale_bytes);
    std::vector<float> out(p.cols);
    for (uint64_t r = 0; r < p.rows; ++r) {
        waste::format::dequantize_row(t, payload, scales, r, out);
        for (uint64_t i = 0; i < p.cols; ++i) {
            const float x = values[r * p.cols + i];
            if (p.fmt == TrunkFormat::f32) {
                ASSERT_EQ(out[i], x);
                continue;
            }
            uint16_t bits;
            std::memcpy(&bits, scales.data() + (r * t.groups_per_row + i / p.group) * 2, 2);
            const float step = waste::format::f16_to_f32(bits);
            // Rounding to nearest loses at most half a step; the step is the
            // stored f16 scale, and since it is at least absmax/qmax rounded
            // to f16 (relative error <= 2^-11), x/step never exceeds
            // qmax + 0.5, so clamping adds nothing. 1e-6 relative covers the
            // float rounding of x/step and q*step.
            const float tolerance = 0.5f * step + std::fabs(x) * 1e-6f;
            ASSERT_LE(std::fabs(out[i] - x), tolerance) << "row " << r << " column " << i;
        }
    }
}

TEST_P(TrunkCodecTest, PadsRowsWithQuantizedZeros) {
    const CodecCase p = GetParam();
    if (p.fmt == TrunkFormat::f32) GTEST_SKIP() << "F32 rows are not padded";
    const TrunkTensor t = make_tensor(p.fmt, p.group, p.rows, p.cols);
    std::vector<float> values(p.rows * p.cols, -1.0f);  // every real value is non-zero
    const std::vector<uint8_t> bytes = waste::format::quantize_tensor(p.fmt, p.group, p.rows, p.cols, values);
    const uint64_t padded = t.groups_per_row * p.group;
    for (uint64_t r = 0; r < p.rows; ++r) {
        const uint8_t* row = bytes.data() + r * t.row_stride;
        for (uint64_t i = 0; i < padded; ++i) {
            int field = 0, zero = 0;
            switch (p.fmt) {
                case TrunkFormat::q8g: field = static_cast<int8_t>(row[i]); zero = 0; break;
                case TrunkFormat::q4g: field = (row[i / 2] >> ((i & 1) * 4)) & 15; zero = 8; break;
                case TrunkFormat::q3g: {
                    const unsigned pair = row[3 * i / 8] | (row[3 * i / 8 + 1] << 8);
                    field = static_cast<int>((pair >> (3 * i % 8)) & 7);
                    zero = 4;
                    break;
                }
                case TrunkFormat::f32: break;
            }
            if (i < p.cols) {
                EXPECT_NE(field, zero) << "row " << r << " value " << i;
            } else {
                EXPECT_EQ(field, zero) << "row " << r << " padding value " << i;
            }
        }
        if (p.fmt == TrunkFormat::q3g) {
            EXPECT_EQ(row[t.row_stride - 1], 0) << "guard byte of row " << r;
        }
    }
}

TEST(TrunkCodec, Q3GFieldsStraddleBytes) {
    // 16 values per row, group 16: 48 bits = 6 bytes + 1 guard byte. Fields 2
    // (bits 6..8), 5 (15..17), 10 (30..32) and 13 (39..41) straddle a byte
    // boundary. The bytes are packed here bit by bit, independently of
    // quantize_tensor, and the scale is 1.0 so values are field - 4.
    const int fields[2][16] = {{0, 1, 2, 3, 4, 5, 6, 7, 7, 6, 5, 4, 3, 2, 1, 0},
                               {7, 0, 7, 0, 5, 3, 1, 6, 2, 4, 7, 7, 0, 7, 0, 7}};
    const TrunkTensor t = make_tensor(TrunkFormat::q3g, 16, 2, 16);
    ASSERT_EQ(t.row_stride, 7u);
    std::vector<uint8_t> payload(t.payload_bytes, 0), scales(t.scale_bytes, 0);
    for (int r = 0; r < 2; ++r) {
        for (int i = 0; i < 16; ++i)
            for (int b = 0; b < 3; ++b)
                if ((fields[r][i] >> b) & 1) {
                    const int bit = 3 * i + b;
                    payload[r * t.row_stride + bit / 8] |= static_cast<uint8_t>(1u << (bit % 8));
                }
        const uint16_t one = 0x3C00;
        std::memcpy(scales.data() + r * 2, &one, 2);
    }
    std::vector<float> out(16);
    for (int r = 0; r < 2; ++r) {
        waste::format::dequantize_row(t, payload, scales, r, out);
        for (int i = 0; i < 16; ++i) EXPECT_EQ(out[i], static_cast<float>(fields[r][i] - 4)) << "row " << r << " i " << i;
    }
    // And quantize_tensor packs the same bits.
    std::vector<float> values;
    for (int r = 0; r < 2; ++r)
        for (int i = 0; i < 16; ++i) values.push_back(static_cast<float>(fields[r][i] - 4));
    const std::vector<uint8_t> bytes = waste::format::quantize_tensor(TrunkFormat::q3g, 16, 2, 16, values);
    // absmax 4 -> scale 4/3, so the values come back as round(v*3/4) * 4/3:
    // not the same fields, but the same arithmetic; check the round trip.
    waste::format::dequantize_row(t, std::span<const uint8_t>(bytes.data(), t.payload_bytes),
                                  std::span<const uint8_t>(bytes.data() + t.payload_bytes, t.scale_bytes), 0, out);
    for (int i = 0; i < 16; ++i) EXPECT_NEAR(out[i], fields[0][i] - 4, 0.5f * 4.0f / 3.0f + 1e-3f) << i;
}

TEST(TrunkCodec, Q4GLowNibbleFirst) {
    const TrunkTensor t = make_tensor(TrunkFormat::q4g, 4, 1, 4);
    const std::vector<uint8_t> payload = {0x9F, 0x08};  // fields 15, 9, 8, 0
    const uint16_t one = 0x3C00;
    std::vector<uint8_t> scales(2);
    std::memcpy(scales.data(), &one, 2);
    std::vector<float> out(4);
    waste::format::dequantize_row(t, payload, scales, 0, out);
    EXPECT_EQ(out, (std::vector<float>{7.0f, 1.0f, 0.0f, -8.0f}));
}

// Fitted scales (trunk_codec.h): per group, the squared error is never above
// the absmax rule's (absmax / qmax is one of the candidates, and the first of
// equal errors wins), every stored code is in the format's range, and on
// Gaussian rows of group 128 the relative RMS error of Q4G falls well below
// absmax's. Measured on 31 M Gaussian attention weights (docs/QUALITY.md):
// 0.1173 → 0.0965 (−18%); 0.9× leaves room for the sample here (65,536
// values). Q8G keeps absmax: the same bytes either way.
TEST(TrunkCodec, FittedScalesNeverErrMoreThanAbsmaxAndQ8GIsUnchanged) {
    std::mt19937 random(99);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const uint64_t rows = 64, cols = 1024;
    std::vector<float> values(rows * cols);
    for (uint64_t r = 0; r < rows; ++r)
        for (uint64_t i = 0; i < cols; ++i)  // magnitudes from 2^-16 to 2^15, one all-zero row
            values[r * cols + i] = r == 3 ? 0.0f : normal(random) * std::ldexp(1.0f, static_cast<int>(r % 32) - 16);
    for (const TrunkFormat fmt : {TrunkFormat::q4g, TrunkFormat::q3g}) {
        const TrunkTensor t = make_tensor(fmt, 128, rows, cols);
        double error[2] = {0, 0}, energy = 0;
        std::vector<std::vector<float>> decoded[2];
        for (int fitted = 0; fitted < 2; ++fitted) {
            const auto rule = fitted ? waste::format::TrunkScales::fitted : waste::format::TrunkScales::absmax;
            const std::vector<uint8_t> bytes = waste::format::quantize_tensor(fmt, 128, rows, cols, values, rule);
            ASSERT_EQ(bytes.size(), t.payload_bytes + t.scale_bytes);
            std::vector<float> out(cols);
            for (uint64_t r = 0; r < rows; ++r) {
                waste::format::dequantize_row(t, {bytes.data(), t.payload_bytes},
                                              {bytes.data() + t.payload_bytes, t.scale_bytes}, r, out);
                decoded[fitted].push_back(out);
            }
        }
        for (uint64_t r = 0; r < rows; ++r)
            for (uint64_t g = 0; g < cols; g += 128) {
                double group_error[2] = {0, 0};
                for (int fitted = 0; fitted < 2; ++fitted)
                    for (uint64_t i = g; i < g + 128; ++i) {
                        const double d = static_cast<double>(decoded[fitted][r][i]) - values[r * cols + i];
                        group_error[fitted] += d * d;
                    }
                ASSERT_LE(group_error[1], group_error[0]) << waste::format::trunk_format_name(fmt) << " row " << r << " group " << g;
                if (r == 3) {
                    for (uint64_t i = g; i < g + 128; ++i) ASSERT_EQ(decoded[1][r][i], 0.0f);
                }
                // The RMS comparison weighs rows alike: each row's error relative to its own energy.
                double row_energy = 0;
                for (uint64_t i = g; i < g + 128; ++i) row_energy += static_cast<double>(values[r * cols + i]) * values[r * cols + i];
                if (row_energy > 0) {
                    error[0] += group_error[0] / row_energy;
                    error[1] += group_error[1] / row_energy;
                    energy += 1;
                }
            }
        if (fmt == TrunkFormat::q4g) {
            EXPECT_LT(std::sqrt(error[1] / energy), 0.9 * std::sqrt(error[0] / energy));
        }
    }
    const auto q8_absmax = waste::format::quantize_tensor(TrunkFormat::q8g, 128, rows, cols, values);
    const auto q8_fitted =
        waste::format::quantize_tensor(TrunkFormat::q8g, 128, rows, cols, values, waste::format::TrunkScales::fitted);
    EXPECT_TRUE(q8_absmax == q8_fitted);
}

TEST(TrunkCodec, AllZeroGroupIsQuantizedZeros) {
    // The scale floor 1e-8 is below half of f16's smallest subnormal (2^-24),
    // so the stored scale may be 0; the values must still be exact zeros.
    const std::vector<float> zeros(128, 0.0f);
    const auto bytes = waste::format::quantize_tensor(TrunkFormat::q8g, 128, 1, 128, zeros);
    ASSERT_EQ(bytes.size(), 130u);
    for (size_t i = 0; i < 128; ++i) EXPECT_EQ(bytes[i], 0);
    uint16_t bits;
    std::memcpy(&bits, bytes.data() + 128, 2);
    EXPECT_TRUE(std::isfinite(waste::format::f16_to_f32(bits)));
}

// ------------------------------------------------------------------ platform

TEST(Crc32, MatchesZlibCheckValue) {
    const char* text = "123456789";
    EXPECT_EQ(waste::platform::crc32(text, 9), 0xCBF43926u);
    EXPECT_EQ(waste::platform::crc32(text, 0), 0u);
    // Chained over two pieces equals the whole.
    EXPECT_EQ(waste::platform::crc32(text + 4, 5, waste::platform::crc32(text, 4)), 0xCBF43926u);
    // An empty piece (data() may be NULL) leaves a running CRC unchanged.
    EXPECT_EQ(waste::platform::crc32(nullptr, 0, 0xCBF43926u), 0xCBF43926u);
}

// The folded path (crc32.cpp: VPCLMULQDQ, 256 bytes a step) against
// libdeflate's whole-buffer CRC, bit for bit (tolerance 0: a CRC is exact):
// lengths at and around the fold's threshold and its 256-byte step, unaligned
// starts, running CRCs carried in, and data that is random, all zeros and all
// ones. Where the CPU does not fold, crc32 is libdeflate's and this checks
// the dispatch only (printed).
TEST(Crc32, FoldedIsLibdeflatesBitForBit) {
    std::printf("crc32 folds on this CPU: %s\n", waste::platform::crc32_folds() ? "yes" : "no");
    std::mt19937 rng(5);
    std::vector<uint8_t> random((size_t{1} << 20) + 300), zeros(random.size(), 0), ones(random.size(), 0xFF);
    for (uint8_t& b : random) b = static_cast<uint8_t>(rng());
    for (const std::vector<uint8_t>* data : {&random, &zeros, &ones})
        for (size_t bytes : {size_t{4095}, size_t{4096}, size_t{4097}, size_t{4352}, size_t{4600}, size_t{65536 + 13},
                             size_t{1} << 20})
            for (size_t offset : {size_t{0}, size_t{1}, size_t{3}, size_t{64}})
                for (uint32_t previous : {0u, 0xCBF43926u, 0xFFFFFFFFu}) {
                    const uint8_t* p = data->data() + offset;
                    ASSERT_EQ(waste::platform::crc32(p, bytes, previous), waste::platform::crc32_library(p, bytes, previous))
                        << bytes << " bytes at offset " << offset << ", previous " << previous;
                }
}

// GB/s of both paths over a 256 MiB buffer: a measurement, not a test.
TEST(Crc32Speed, DISABLED_FoldedAndLibdeflate) {
    std::vector<uint8_t> data(size_t{256} << 20, 0x5A);  // beyond the caches, as records landing from disk are
    for (const bool folded : {true, false}) {
        uint32_t crc = 0;
        const auto start = std::chrono::steady_clock::now();
        for (int r = 0; r < 4; ++r)
            crc = folded ? waste::platform::crc32(data.data(), data.size(), crc)
                         : waste::platform::crc32_library(data.data(), data.size(), crc);
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        std::printf("%s: %.1f GB/s (crc %08x)\n", folded ? "crc32" : "libdeflate", 4.0 * data.size() / seconds / 1e9, crc);
    }
}

TEST(MemoryInfo, ParsesCgroupMemoryMax) {
    using waste::platform::parse_cgroup_memory_max;
    EXPECT_EQ(parse_cgroup_memory_max("max\n"), 0u);
    EXPECT_EQ(parse_cgroup_memory_max("max"), 0u);
    EXPECT_EQ(parse_cgroup_memory_max("8589934592\n"), 8589934592u);
    EXPECT_EQ(parse_cgroup_memory_max("4096"), 4096u);
    EXPECT_EQ(parse_cgroup_memory_max(""), 0u);
    EXPECT_EQ(parse_cgroup_memory_max("\n"), 0u);
    EXPECT_EQ(parse_cgroup_memory_max("12abc\n"), 0u);
    EXPECT_EQ(parse_cgroup_memory_max("-1"), 0u);
    EXPECT_EQ(parse_cgroup_memory_max(" 100"), 0u);
    EXPECT_EQ(parse_cgroup_memory_max("9223372036854771712\n"), 9223372036854771712u);  // the kernel's "no limit" page-rounded
    EXPECT_EQ(parse_cgroup_memory_max("99999999999999999999"), 0u);  // 20 digits: over 2^64, junk
    // /proc/self/cgroup: the v2 line, and v1's memory line among others
    using waste::platform::cgroup_path_of;
    const std::string hybrid = "9:name=systemd:/\n4:cpu,memory:/process_api/abc\n1:cpu:/other\n0::/user.slice\n";
    EXPECT_EQ(cgroup_path_of(hybrid, "memory"), "/process_api/abc");
    EXPECT_EQ(cgroup_path_of(hybrid, ""), "/user.slice");
    EXPECT_EQ(cgroup_path_of("0::/\n", "memory"), "");
    EXPECT_EQ(cgroup_path_of("4:memory:/a\n", ""), "");
    EXPECT_EQ(cgroup_path_of("4:memoryx:/a\n", "memory"), "");
    EXPECT_EQ(cgroup_path_of("garbage\n", ""), "");
    const auto info = waste::platform::query_memory_info();
    EXPECT_GT(info.physical_bytes, 0u);
    EXPECT_GT(info.usable_bytes, 0u);
    EXPECT_LE(info.usable_bytes, info.physical_bytes);
    EXPECT_LE(info.available_bytes, info.usable_bytes);
#if defined(__linux__) || defined(_WIN32)
    EXPECT_GT(info.available_bytes, 0u);  // known on Linux (MemAvailable) and Windows
#endif
}

TEST(MemoryInfo, ParsesMemAvailable) {
    using waste::platform::parse_meminfo_available;
    EXPECT_EQ(parse_meminfo_available("MemTotal:       24735048 kB\nMemFree:        21000000 kB\n"
                                      "MemAvailable:   23851236 kB\nBuffers:            1234 kB\n"),
              23851236ull * 1024);
    EXPECT_EQ(parse_meminfo_available("MemTotal:       24735048 kB\n"), 0u);  // kernels before 3.14
    EXPECT_EQ(parse_meminfo_available(""), 0u);
    EXPECT_EQ(parse_meminfo_available("MemAvailable: kB\n"), 0u);
    EXPECT_EQ(parse_meminfo_available("MemAvailable:   99999999999999999999 kB\n"), 0u);  // over 2^64 bytes: junk
    EXPECT_EQ(parse_meminfo_available("XMemAvailable:   5 kB\nMemAvailable:   7 kB\n"), 7u * 1024);
}

}  // namespace
