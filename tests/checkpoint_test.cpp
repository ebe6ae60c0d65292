// checkpoint_test.cpp — the converter's input side: the weight decoders
// bit-exact against plain formulas on every code, the safetensors reader and
// the checkpoint directory on hostile files (each refused naming the object),
// and a round trip against synthetic HF checkpoints written by the PyTorch
// reference's hf_synth (bf16, FP8 block, MXFP4, INT4 experts), compared
// bit-exact with that writer's own independent numpy decoders.
//
// DecodeSpeed.DISABLED_K3Expert is a measurement, not a test: run it with
//   ./checkpoint_test --gtest_also_run_disabled_tests --gtest_filter='DecodeSpeed.*'
//
// Tolerance: none anywhere. Every decoded value is a product the IEEE rules
// fix to one f32 (the python side computes the same products in f32 or
// exactly), so "equal bits" is the only honest test.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <chrono>
#include <cstdio>
#include <random>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "convert/checkpoint.h"
#include "convert/checkpoint_source.h"
#include "convert/safetensors.h"
#include "convert/weight_decode.h"
#include "platform/error.h"
#include "test_support.h"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace waste;
using namespace waste::convert;

namespace {

uint32_t bits_of(float v) {
    uint32_t b;
    std::memcpy(&b, &v, 4);
    return b;
}

// Equal bits, or both NaN.
::testing::AssertionResult same_float(float got, float want) {
    if ((std::isnan(got) && std::isnan(want)) || bits_of(got) == bits_of(want)) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "got " << got << " (0x" << std::hex << bits_of(got) << ") want " << want
                                         << " (0x" << bits_of(want) << ")";
}

// The message of the waste::Error body throws ("" if none).
std::string error_of(const std::function<void()>& body, waste_status* status = nullptr) {
    try {
        body();
    } catch (const Error& e) {
        if (status) *status = e.status();
        return e.what();
    }
    return "";
}

// --- reference decoders: the formulas, nothing shared with the library -------

double ref_bf16(uint16_t b) {
    const int sign = b >> 15, e = (b >> 7) & 0xFF, m = b & 0x7F;
    double v;
    if (e == 0xFF) v = m ? NAN : INFINITY;
    else if (e == 0) v = std::ldexp(m, -126 - 7);
    else v = std::ldexp(128 + m, e - 127 - 7);
    return sign ? -v : v;
}

double ref_f16(uint16_t b) {
    const int sign = b >> 15, e = (b >> 10) & 0x1F, m = b & 0x3FF;
    double v;
    if (e == 0x1F) v = m ? NAN : INFINITY;
    else if (e == 0) v = std::ldexp(m, -14 - 10);
    else v = std::ldexp(1024 + m, e - 15 - 10);
    return sign ? -v : v;
}

// other-families §1: e4m3fn, bias 7, 0x7f/0xff NaN, no inf.
double ref_fp8(uint8_t c) {
    const int sign = c >> 7, e = (c >> 3) & 0xF, m = c & 7;
    double v;
    if (e == 15 && m == 7) v = NAN;
    else if (e == 0) v = m / 8.0 * std::pow(2.0, 1 - 7);
    else v = (1 + m / 8.0) * std::pow(2.0, e - 7);
    return sign ? -v : v;
}

// other-families §8, the table as printed there.
const double fp4_table[16] = {0, .5, 1, 1.5, 2, 3, 4, 6, -0.0, -.5, -1, -1.5, -2, -3, -4, -6};

// --- writing safetensors files by hand ---------------------------------------

struct RawTensor {
    std::string name, dtype;
    std::vector<int64_t> shape;
    std::string bytes;
};

// The file image: 8-byte little-endian header length, header text, data.
std::string with_header(const std::string& text, const std::string& data) {
    std::string out(8, '\0');
    const uint64_t n = text.size();
    for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xFF);
    return out + text + data;
}

std::string safetensors_bytes(const std::vector<RawTensor>& tensors, json extra = json::object()) {
    json header = json::object();
    uint64_t offset = 0;
    std::string data;
    for (const RawTensor& t : tensors) {
        header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.bytes.size()}}};
        offset += t.bytes.size();
        data += t.bytes;
    }
    for (auto& [k, v] : extra.items()) header[k] = v;
    return with_header(header.dump(), data);
}

std::string bf16_bytes(const std::vector<float>& values) {
    std::string out;
    for (float v : values) {
        const uint32_t b = bits_of(v);
        const uint16_t h = static_cast<uint16_t>(b >> 16);  // exact for the values used here
        out.push_back(static_cast<char>(h & 0xFF));
        out.push_back(static_cast<char>(h >> 8));
    }
    return out;
}

std::string refusal(const std::string& file_bytes) {
    waste_test::TempDir dir;
    const fs::path path = dir / "model.safetensors";
    waste_test::write_file(path, file_bytes);
    return error_of([&] { (void)SafetensorsFile::open(path); });
}

// A one-shard checkpoint directory from raw tensors.
void write_checkpoint(const fs::path& dir, const std::vector<RawTensor>& tensors, json config = json::object()) {
    fs::create_directories(dir);
    if (config.empty()) config = {{"model_type", "kimi_linear"}, {"architectures", {"KimiLinearForCausalLM"}}};
    waste_test::write_file(dir / "config.json", config.dump());
    waste_test::write_file(dir / "model.safetensors", safetensors_bytes(tensors));
}

// --- the python writer -------------------------------------------------------

using waste_test::hf_synth;

}  // namespace

// =============================================================================
// decoders

TEST(WeightDecode, Bf16AllCodes) {
    std::vector<uint8_t> src(2 * 65536);
    for (uint32_t c = 0; c < 65536; ++c) {
        src[2 * c] = c & 0xFF;
        src[2 * c + 1] = c >> 8;
    }
    std::vector<float> out(65536);
    decode_bf16(src.data(), 65536, out.data());
    for (uint32_t c = 0; c < 65536; ++c) {
        ASSERT_TRUE(same_float(out[c], static_cast<float>(ref_bf16(c)))) << "bf16 code " << c;
        ASSERT_TRUE(same_float(bf16_to_f32(static_cast<uint16_t>(c)), out[c])) << "bf16 code " << c;
    }
}

TEST(WeightDecode, F16AllCodesSubnormalsKept) {
    std::vector<uint8_t> src(2 * 65536);
    for (uint32_t c = 0; c < 65536; ++c) {
        src[2 * c] = c & 0xFF;
        src[2 * c + 1] = c >> 8;
    }
    std::vector<float> out(65536);
    decode_f16(src.data(), 65536, out.data());
    for (uint32_t c = 0; c < 65536; ++c)
        ASSERT_TRUE(same_float(out[c], static_cast<float>(ref_f16(c)))) << "f16 code " << c;
    EXPECT_EQ(out[1], std::ldexp(1.0f, -24));  // smallest subnormal, not flushed
}

TEST(WeightDecode, Fp8E4m3fnAllCodes) {
    for (int c = 0; c < 256; ++c)
        ASSERT_TRUE(same_float(fp8_e4m3fn_to_f32(static_cast<uint8_t>(c)), static_cast<float>(ref_fp8(c)))) << "code " << c;
    // Anchors of the fn variant: max 448, no inf, the NaNs, the subnormal step.
    EXPECT_EQ(fp8_e4m3fn_to_f32(0x7E), 448.0f);
    EXPECT_EQ(fp8_e4m3fn_to_f32(0xFE), -448.0f);
    EXPECT_TRUE(std::isnan(fp8_e4m3fn_to_f32(0x7F)));
    EXPECT_TRUE(std::isnan(fp8_e4m3fn_to_f32(0xFF)));
    EXPECT_EQ(fp8_e4m3fn_to_f32(0x78), 256.0f);  // e=15, m=0 is a number in fn, not inf
    EXPECT_EQ(fp8_e4m3fn_to_f32(0x38), 1.0f);
    EXPECT_EQ(fp8_e4m3fn_to_f32(0x01), std::ldexp(1.0f, -9));
    EXPECT_EQ(fp8_e4m3fn_to_f32(0x08), std::ldexp(1.0f, -6));
    int nans = 0;
    for (int c = 0; c < 256; ++c) nans += std::isnan(fp8_e4m3fn_to_f32(static_cast<uint8_t>(c)));
    EXPECT_EQ(nans, 2);
}

TEST(WeightDecode, Fp8BlockRowPartialEdge) {
    // 300 columns in blocks of 128: 128 + 128 + 44, each with its own scale; all 256 codes appear.
    const size_t cols = 300, block = 128;
    std::vector<uint8_t> codes(cols);
    for (size_t j = 0; j < cols; ++j) codes[j] = static_cast<uint8_t>((j * 7) % 256 == 0x7F ? 0 : (j * 7) % 256);
    const float scales[3] = {0.5f, 3.0e-3f, 1234.5f};
    std::vector<float> out(cols);
    decode_fp8_block_row(codes.data(), scales, cols, block, out.data());
    for (size_t j = 0; j < cols; ++j) {
        const float want = static_cast<float>(ref_fp8(codes[j])) * scales[j / block];
        ASSERT_TRUE(same_float(out[j], want)) << "col " << j;
    }
}

TEST(WeightDecode, Fp4TableAndMxfp4AllCodesAllScales) {
    for (int n = 0; n < 16; ++n) EXPECT_TRUE(same_float(fp4_e2m1_to_f32(static_cast<uint8_t>(n)), static_cast<float>(fp4_table[n])));
    EXPECT_TRUE(std::signbit(fp4_e2m1_to_f32(8)));  // -0
    for (int e = 0; e < 256; ++e) {
        // One row of 32 values: every nibble twice, low nibble = even element.
        uint8_t packed[16];
        for (int j = 0; j < 16; ++j) packed[j] = static_cast<uint8_t>((j & 15) | (((15 - j) & 15) << 4));
        const uint8_t scale = static_cast<uint8_t>(e);
        float out[32];
        decode_mxfp4_row(packed, &scale, 32, out);
        for (int i = 0; i < 32; ++i) {
            const int nibble = (i % 2 == 0) ? (packed[i / 2] & 15) : (packed[i / 2] >> 4);
            const double s = e == 255 ? NAN : std::ldexp(1.0, e - 127);
            ASSERT_TRUE(same_float(out[i], static_cast<float>(fp4_table[nibble] * s))) << "e " << e << " element " << i;
        }
        if (e != 255) {
            EXPECT_EQ(e8m0_to_f32(scale), static_cast<float>(std::ldexp(1.0, e - 127)));
        }
    }
    EXPECT_TRUE(std::isnan(e8m0_to_f32(255)));
    EXPECT_GT(e8m0_to_f32(0), 0.0f);  // 2^-127: a subnormal f32, kept
}

TEST(WeightDecode, Mxfp4PartialGroupAndOddColumns) {
    // 70 columns: groups of 32, 32, 6; the last byte holds one element.
    const size_t cols = 70;
    std::vector<uint8_t> packed((cols + 1) / 2);
    for (size_t j = 0; j < packed.size(); ++j) packed[j] = static_cast<uint8_t>(j * 37 + 11);
    const uint8_t scales[3] = {120, 127, 133};
    std::vector<float> out(cols);
    decode_mxfp4_row(packed.data(), scales, cols, out.data());
    for (size_t i = 0; i < cols; ++i) {
        const int nibble = (i % 2 == 0) ? (packed[i / 2] & 15) : (packed[i / 2] >> 4);
        ASSERT_TRUE(same_float(out[i], static_cast<float>(fp4_table[nibble] * std::ldexp(1.0, scales[i / 32] - 127))));
    }
}

TEST(WeightDecode, Int4AllNibblesAllPositions) {
    // other-families §1: column 8c+j at bits 4j..4j+3 of word c, value (u - 8) * scale.
    for (int j = 0; j < 8; ++j) {
        for (uint32_t u = 0; u < 16; ++u) {
            const uint32_t word = (u << (4 * j)) | (j == 0 ? 0x88888880u : 0u);
            uint8_t bytes[4];
            std::memcpy(bytes, &word, 4);
            const float scale = 0.375f;
            float out[8];
            decode_int4_row(bytes, &scale, 8, 32, out);
            for (int k = 0; k < 8; ++k) {
                const uint32_t nib = (word >> (4 * k)) & 15;
                ASSERT_EQ(out[k], (static_cast<int>(nib) - 8) * scale) << "pos " << j << " nibble " << u;
            }
        }
    }
    // Groups: 70 columns, group 32 → 3 scales; 9 words (the last partly used).
    const size_t cols = 70;
    std::vector<uint8_t> words(4 * 9);
    for (size_t i = 0; i < words.size(); ++i) words[i] = static_cast<uint8_t>(i * 53 + 7);
    const float scales[3] = {1.0f, -0.25f, 3.0e-5f};
    std::vector<float> out(cols);
    decode_int4_row(words.data(), scales, cols, 32, out.data());
    for (size_t i = 0; i < cols; ++i) {
        uint32_t w;
        std::memcpy(&w, words.data() + 4 * (i / 8), 4);
        const int nib = static_cast<int>((w >> (4 * (i % 8))) & 15);
        ASSERT_EQ(out[i], static_cast<float>((nib - 8) * static_cast<double>(scales[i / 32]))) << i;
    }
}

TEST(WeightDecode, FirstNonFinite) {
    std::vector<float> v = {1, 2, 3, 4};
    EXPECT_EQ(first_non_finite(v.data(), v.size()), 4u);
    v[2] = INFINITY;
    EXPECT_EQ(first_non_finite(v.data(), v.size()), 2u);
    v[1] = NAN;
    EXPECT_EQ(first_non_finite(v.data(), v.size()), 1u);
}

// =============================================================================
// safetensors reader

TEST(Safetensors, ReadsTensorsAndMetadata) {
    waste_test::TempDir dir;
    const fs::path path = dir / "a.safetensors";
    waste_test::write_file(path, safetensors_bytes({{"b", "BF16", {2, 3}, bf16_bytes({1, 2, 3, 4, 5, 6})},
                                                    {"a", "F32", {}, std::string("\0\0\x80\x3f", 4)},
                                                    {"empty", "F16", {0, 4}, ""}},
                                                   {{"__metadata__", {{"format", "pt"}}}}));
    const SafetensorsFile f = SafetensorsFile::open(path);
    ASSERT_EQ(f.tensors().size(), 3u);
    EXPECT_EQ(f.header().metadata.at("format"), "pt");
    const TensorEntry* b = f.find("b");
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(b->dtype, Dtype::bf16);
    EXPECT_EQ(b->shape, (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(b->numel, 6u);
    uint16_t raw[6];
    f.read(*b, 0, raw, 12);
    EXPECT_EQ(bf16_to_f32(raw[5]), 6.0f);
    EXPECT_EQ(f.find("a")->numel, 1u);  // a scalar
    EXPECT_EQ(f.find("empty")->bytes, 0u);
    EXPECT_NE(error_of([&] { f.read(*b, 4, raw, 12); }).find("outside tensor \"b\""), std::string::npos);
}

TEST(Safetensors, HostileHeadersAreRefusedNamingTheObject) {
    const std::string two_f32(8, '\0');
    struct Case {
        const char* what;
        std::string bytes;
        const char* needle;
    };
    std::string huge_length(8, '\0');
    huge_length[7] = 0x7F;
    std::string past_end = with_header("{}", "");
    past_end[0] = 100;  // header length 100, file has 2 bytes of header
    const Case cases[] = {
        {"too short", "abc", "too short"},
        {"header length past the end", past_end, "header length 100 runs past the end"},
        {"header length over the limit", huge_length + "{}", "exceeds the"},
        {"bad json", with_header("{\"a\": {", ""), "not valid JSON"},
        {"not an object", with_header("[1,2]", ""), "must be a JSON object"},
        {"unknown dtype", with_header(R"({"w":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})", two_f32),
         "tensor \"w\" has dtype \"F64\""},
        {"offsets past the end", with_header(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", two_f32),
         "tensor \"w\": data_offsets end 16 is past the end"},
        {"size/shape mismatch", with_header(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", two_f32),
         "tensor \"w\": data_offsets [0, 8] hold 8 bytes, but F32 shape [3] needs 12"},
        {"overlap",
         with_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                     two_f32),
         "tensors \"a\" [0, 8) and \"b\" [4, 8) overlap"},
        {"numel overflow",
         with_header(R"({"w":{"dtype":"F32","shape":[1099511627776,1099511627776],"data_offsets":[0,8]}})", two_f32),
         "tensor \"w\""},
        {"numel product overflow",
         with_header(R"({"w":{"dtype":"U8","shape":[16777216,16777216,16777216],"data_offsets":[0,8]}})", two_f32),
         "more than 1099511627776 elements"},
        {"negative dim", with_header(R"({"w":{"dtype":"U8","shape":[-1],"data_offsets":[0,8]}})", two_f32),
         "tensor \"w\": every shape dimension must be a non-negative integer, got -1"},
        {"fractional offset", with_header(R"({"w":{"dtype":"U8","shape":[8],"data_offsets":[0.5,8]}})", two_f32),
         "tensor \"w\": data_offsets[0]"},
        {"end before begin", with_header(R"({"w":{"dtype":"U8","shape":[0],"data_offsets":[8,0]}})", two_f32),
         "end before begin"},
        {"missing shape", with_header(R"({"w":{"dtype":"U8","data_offsets":[0,8]}})", two_f32),
         "tensor \"w\" has no \"shape\""},
        {"duplicate name",
         with_header(R"({"w":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},"w":{"dtype":"U8","shape":[4],"data_offsets":[4,8]}})",
                     two_f32),
         "names tensor \"w\" twice"},
        {"deep nesting", with_header(R"({"w":{"dtype":"U8","shape":[[[[1]]]],"data_offsets":[0,8]}})", two_f32),
         "nests deeper"},
        {"bad metadata", with_header(R"({"__metadata__":{"a":1}})", ""), "__metadata__ \"a\" must be a string"},
    };
    for (const Case& c : cases) {
        const std::string message = refusal(c.bytes);
        EXPECT_NE(message.find(c.needle), std::string::npos) << c.what << ": " << message;
        EXPECT_NE(message.find("model.safetensors"), std::string::npos) << c.what << " names the file: " << message;
    }
}

TEST(Safetensors, TruncatedFileAndChangedFile) {
    waste_test::TempDir dir;
    const fs::path path = dir / "t.safetensors";
    const std::string full = safetensors_bytes({{"w", "F32", {4}, std::string(16, '\1')}});
    waste_test::write_file(path, full.substr(0, full.size() - 3));
    const std::string message = error_of([&] { (void)SafetensorsFile::open(path); });
    EXPECT_NE(message.find("tensor \"w\": data_offsets end 16 is past the end of the data section (13 bytes"),
              std::string::npos)
        << message;

    // Shrunk after open: the next read refuses instead of reading garbage.
    waste_test::write_file(path, full);
    const SafetensorsFile f = SafetensorsFile::open(path);
    waste_test::write_file(path, full.substr(0, full.size() - 3));
    float out[4];
    EXPECT_NE(error_of([&] { f.read(*f.find("w"), 0, out, 16); }).find("changed size"), std::string::npos);
}

// =============================================================================
// checkpoint directories

TEST(Checkpoint, SingleFileNaturalOrderAndRows) {
    waste_test::TempDir dir;
    std::vector<RawTensor> tensors;
    for (int layer : {10, 2, 1})
        tensors.push_back({"model.layers." + std::to_string(layer) + ".w", "BF16", {3, 2},
                           bf16_bytes({1.f * layer, 2, 3, 4, 5, 6})});
    write_checkpoint(dir / "c", tensors);
    const Checkpoint ck = Checkpoint::open(dir / "c");
    EXPECT_EQ(ck.names(), (std::vector<std::string>{"model.layers.1.w", "model.layers.2.w", "model.layers.10.w"}));
    EXPECT_FALSE(ck.has_nested_text_config());
    EXPECT_EQ(ck.architecture(), "KimiLinearForCausalLM");
    EXPECT_EQ(ck.shards().size(), 1u);
    EXPECT_EQ(ck.shards()[0].file, "model.safetensors");
    EXPECT_EQ(ck.read_f32("model.layers.10.w"), (std::vector<float>{10, 2, 3, 4, 5, 6}));
    std::vector<float> rows(2);
    ck.read_f32_rows("model.layers.2.w", 2, 1, rows);
    EXPECT_EQ(rows, (std::vector<float>{5, 6}));
    EXPECT_NE(error_of([&] { ck.read_f32_rows("model.layers.2.w", 2, 2, rows); }).find("outside tensor"), std::string::npos);
    std::vector<float> small(5);
    EXPECT_NE(error_of([&] { ck.read_f32("model.layers.2.w", small); }).find("needs a buffer of 6 floats, got 5"),
              std::string::npos);
    EXPECT_NE(error_of([&] { (void)ck.info("nope"); }).find("no tensor \"nope\""), std::string::npos);
    EXPECT_TRUE(natural_less("a.9.b", "a.10.b"));
    EXPECT_FALSE(natural_less("a.10.b", "a.9.b"));
    EXPECT_TRUE(natural_less("a", "a.0"));
}

TEST(Checkpoint, NonFiniteWeightsAreRefusedNamingTheTensor) {
    waste_test::TempDir dir;
    write_checkpoint(dir / "c", {{"good", "BF16", {2}, bf16_bytes({1, 2})},
                                 {"bad", "BF16", {2, 2}, bf16_bytes({1, 2, 3, NAN})},
                                 {"inf", "F32", {2}, std::string("\0\0\x80\x3f\0\0\x80\x7f", 8)},
                                 {"fp8", "F8_E4M3", {1, 2}, std::string("\x38\x7f", 2)},
                                 {"fp8_scale_inv", "F32", {1, 1}, std::string("\0\0\x80\x3f", 4)},
                                 {"ids", "I32", {1}, std::string(4, '\0')}});
    const Checkpoint ck = Checkpoint::open(dir / "c");
    EXPECT_EQ(ck.read_f32("good"), (std::vector<float>{1, 2}));
    std::string m = error_of([&] { (void)ck.read_f32("bad"); });
    EXPECT_NE(m.find("tensor \"bad\""), std::string::npos) << m;
    EXPECT_NE(m.find("non-finite weight nan at element 3 (row 1, col 1)"), std::string::npos) << m;
    m = error_of([&] { (void)ck.read_f32("inf"); });
    EXPECT_NE(m.find("tensor \"inf\""), std::string::npos) << m;
    EXPECT_NE(m.find("inf at element 1"), std::string::npos) << m;
    m = error_of([&] { (void)ck.read_f32("fp8"); });  // 0x7f is the fn NaN
    EXPECT_NE(m.find("tensor \"fp8\" (fp8_block"), std::string::npos) << m;
    waste_status status = WASTE_OK;
    m = error_of([&] { (void)ck.read_f32("ids"); }, &status);
    EXPECT_EQ(status, WASTE_ERR_UNSUPPORTED);
    EXPECT_NE(m.find("tensor \"ids\" is I32"), std::string::npos) << m;
}

TEST(Checkpoint, HostileDirectoriesAreRefusedBeforeAnyRead) {
    waste_test::TempDir dir;
    // No config.json.
    fs::create_directories(dir / "none");
    EXPECT_NE(error_of([&] { (void)Checkpoint::open(dir / "none"); }).find("no config.json"), std::string::npos);
    // Config but no weights.
    waste_test::write_file(dir / "none" / "config.json", "{}");
    EXPECT_NE(error_of([&] { (void)Checkpoint::open(dir / "none"); }).find("neither model.safetensors.index.json"),
              std::string::npos);
    // Bad config JSON.
    write_checkpoint(dir / "badcfg", {{"w", "BF16", {1}, bf16_bytes({1})}});
    waste_test::write_file(dir / "badcfg" / "config.json", "{\"a\": ");
    EXPECT_NE(error_of([&] { (void)Checkpoint::open(dir / "badcfg"); }).find("config.json is not valid JSON"),
              std::string::npos);

    // Two shards and an index.
    const fs::path two = dir / "two";
    fs::create_directories(two);
    waste_test::write_file(two / "config.json", "{}");
    waste_test::write_file(two / "s1.safetensors", safetensors_bytes({{"a", "BF16", {2}, bf16_bytes({1, 2})}}));
    waste_test::write_file(two / "s2.safetensors", safetensors_bytes({{"b", "BF16", {1}, bf16_bytes({3})}}));
    waste_test::write_file(two / "model.safetensors.index.json",
                           json{{"weight_map", {{"a", "s1.safetensors"}, {"b", "s2.safetensors"}}}}.dump());
    EXPECT_EQ(Checkpoint::open(two).read_f32("b"), (std::vector<float>{3}));

    // Index naming a tensor its shard lacks.
    waste_test::write_file(two / "model.safetensors.index.json",
                           json{{"weight_map", {{"a", "s1.safetensors"}, {"b", "s1.safetensors"}}}}.dump());
    std::string m = error_of([&] { (void)Checkpoint::open(two); });
    EXPECT_NE(m.find("maps tensor \"b\" to s1.safetensors, which does not hold it"), std::string::npos) << m;
    // Index naming a shard outside the directory.
    waste_test::write_file(two / "model.safetensors.index.json", json{{"weight_map", {{"a", "../s1.safetensors"}}}}.dump());
    m = error_of([&] { (void)Checkpoint::open(two); });
    EXPECT_NE(m.find("weight_map[\"a\"] must be a file name inside the checkpoint"), std::string::npos) << m;
    // Missing shard: named, with a tensor it should hold.
    waste_test::write_file(two / "model.safetensors.index.json",
                           json{{"weight_map", {{"a", "s1.safetensors"}, {"b", "s3.safetensors"}}}}.dump());
    waste_status status = WASTE_OK;
    m = error_of([&] { (void)Checkpoint::open(two); }, &status);
    EXPECT_EQ(status, WASTE_ERR_IO);
    EXPECT_NE(m.find("1 of 2 shards named by model.safetensors.index.json are missing: s3.safetensors"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("\"b\""), std::string::npos) << m;
    // Truncated shard.
    waste_test::write_file(two / "model.safetensors.index.json",
                           json{{"weight_map", {{"a", "s1.safetensors"}, {"b", "s2.safetensors"}}}}.dump());
    const std::string s2 = waste_test::read_file(two / "s2.safetensors");
    waste_test::write_file(two / "s2.safetensors", s2.substr(0, s2.size() - 1));
    m = error_of([&] { (void)Checkpoint::open(two); });
    EXPECT_NE(m.find("s2.safetensors: tensor \"b\": data_offsets end 2 is past the end"), std::string::npos) << m;

    // Companions that do not fit their weight.
    write_checkpoint(dir / "fp8", {{"w", "F8_E4M3", {2, 300}, std::string(600, '\x38')},
                                   {"w_scale_inv", "F32", {1, 2}, std::string(8, '\0')}});
    m = error_of([&] { (void)Checkpoint::open(dir / "fp8"); });
    EXPECT_NE(m.find("\"w_scale_inv\" (F32 [1, 2] in model.safetensors) must be F32/BF16/F16 [1, 3]"), std::string::npos)
        << m;
    write_checkpoint(dir / "fp8b", {{"w", "F8_E4M3", {2, 3}, std::string(6, '\x38')}});
    m = error_of([&] { (void)Checkpoint::open(dir / "fp8b"); });
    EXPECT_NE(m.find("FP8 tensor \"w\" (F8_E4M3 [2, 3] in model.safetensors) has no \"w_scale_inv\""), std::string::npos)
        << m;
    write_checkpoint(dir / "mx", {{"w_packed", "U8", {2, 16}, std::string(32, '\0')},
                                  {"w_scale", "U8", {2, 2}, std::string(4, '\x7f')}});
    m = error_of([&] { (void)Checkpoint::open(dir / "mx"); });
    EXPECT_NE(m.find("must be U8 (E8M0) [2, 1] for MXFP4 weight \"w_packed\""), std::string::npos) << m;
    write_checkpoint(dir / "i4", {{"w_packed", "I32", {2, 4}, std::string(32, '\0')},
                                  {"w_scale", "BF16", {2, 1}, bf16_bytes({1, 1})},
                                  {"w_shape", "I64", {2}, std::string("\x02\0\0\0\0\0\0\0\x40\0\0\0\0\0\0\0", 16)}});
    m = error_of([&] { (void)Checkpoint::open(dir / "i4"); });
    EXPECT_NE(m.find("\"w_shape\" (I64 [2] in model.safetensors) holds [2, 64], which does not fit packed"),
              std::string::npos)
        << m;
}

TEST(Checkpoint, EncodedWeightsDecodeRowsAndEdges) {
    // FP8 [130, 300] with 128x128 blocks: partial blocks on both edges, a
    // different scale per block; rows read in pieces agree with the whole.
    waste_test::TempDir dir;
    const int rows = 130, cols = 300;
    std::string codes(rows * cols, '\0');
    std::mt19937 rng(5);
    for (char& c : codes) {
        uint8_t v = static_cast<uint8_t>(rng());
        if ((v & 0x7F) == 0x7F) v = 0;
        c = static_cast<char>(v);
    }
    std::vector<float> scales = {0.5f, 2.0f, 1e-3f, 7.0f, 3.25f, 1e4f};  // [2, 3]
    std::string scale_bytes(reinterpret_cast<const char*>(scales.data()), 24);
    write_checkpoint(dir / "c", {{"w", "F8_E4M3", {rows, cols}, codes}, {"w_scale_inv", "F32", {2, 3}, scale_bytes}});
    const Checkpoint ck = Checkpoint::open(dir / "c");
    EXPECT_EQ(ck.names(), (std::vector<std::string>{"w"}));
    EXPECT_EQ(ck.info("w").encoding, WeightEncoding::fp8_block);
    EXPECT_EQ(ck.info("w").parts, (std::vector<std::string>{"w", "w_scale_inv"}));
    const std::vector<float> all = ck.read_f32("w");
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c)
            ASSERT_TRUE(same_float(all[r * cols + c], static_cast<float>(ref_fp8(static_cast<uint8_t>(codes[r * cols + c]))) *
                                                          scales[(r / 128) * 3 + c / 128]))
                << r << "," << c;
    std::vector<float> part(3 * cols);
    ck.read_f32_rows("w", 126, 3, part);  // straddles the block-row edge
    EXPECT_TRUE(std::equal(part.begin(), part.end(), all.begin() + 126 * cols));
}

TEST(Checkpoint, AlternativeLayouts) {
    // gpt-oss-style MXFP4 (other-families §8): stacked experts, `X_blocks`
    // [E, out, G, 16] + `X_scales` [E, out, G] -> logical X [E, out, G*32].
    waste_test::TempDir dir;
    std::string blocks(2 * 3 * 2 * 16, '\0'), scales(2 * 3 * 2, '\0');
    for (size_t i = 0; i < blocks.size(); ++i) blocks[i] = static_cast<char>(i * 29 + 3);
    for (size_t i = 0; i < scales.size(); ++i) scales[i] = static_cast<char>(120 + i);
    // INT4 without `_shape` (in = 8 * words), f32 scales; FP8 with bf16 scale_inv.
    std::string words(2 * 2 * 4, '\0');
    for (size_t i = 0; i < words.size(); ++i) words[i] = static_cast<char>(i * 71 + 5);
    const std::vector<float> int4_scales = {0.5f, -2.0f};
    write_checkpoint(dir / "c", {{"experts.gate_up_proj_blocks", "U8", {2, 3, 2, 16}, blocks},
                                 {"experts.gate_up_proj_scales", "U8", {2, 3, 2}, scales},
                                 {"q.weight_packed", "I32", {2, 2}, words},
                                 {"q.weight_scale", "F32", {2, 1}, std::string(reinterpret_cast<const char*>(int4_scales.data()), 8)},
                                 {"f.weight", "F8_E4M3", {1, 2}, std::string("\x38\xb8", 2)},
                                 {"f.weight_scale_inv", "BF16", {1, 1}, bf16_bytes({0.25f})}});
    const Checkpoint ck = Checkpoint::open(dir / "c");
    EXPECT_EQ(ck.names(), (std::vector<std::string>{"experts.gate_up_proj", "f.weight", "q.weight"}));
    const TensorInfo& mx = ck.info("experts.gate_up_proj");
    EXPECT_EQ(mx.encoding, WeightEncoding::mxfp4);
    EXPECT_EQ(mx.shape, (std::vector<int64_t>{2, 3, 64}));
    const std::vector<float> v = ck.read_f32("experts.gate_up_proj");
    for (size_t row = 0; row < 6; ++row)
        for (size_t i = 0; i < 64; ++i) {
            const uint8_t byte = static_cast<uint8_t>(blocks[row * 32 + i / 2]);
            const int nibble = i % 2 ? byte >> 4 : byte & 15;
            const int e = static_cast<uint8_t>(scales[row * 2 + i / 32]);
            ASSERT_TRUE(same_float(v[row * 64 + i], static_cast<float>(fp4_table[nibble] * std::ldexp(1.0, e - 127))));
        }
    EXPECT_EQ(ck.info("q.weight").shape, (std::vector<int64_t>{2, 16}));
    const std::vector<float> q = ck.read_f32("q.weight");
    for (size_t r = 0; r < 2; ++r)
        for (size_t i = 0; i < 16; ++i) {
            uint32_t w;
            std::memcpy(&w, words.data() + (r * 2 + i / 8) * 4, 4);
            ASSERT_EQ(q[r * 16 + i], (static_cast<int>((w >> (4 * (i % 8))) & 15) - 8) * int4_scales[r]);
        }
    EXPECT_EQ(ck.read_f32("f.weight"), (std::vector<float>{0.25f, -0.25f}));
}

TEST(Checkpoint, GptOssFusedExpertsReadAsPerExpertMatricesBitExact) {
    // gpt-oss's experts (other-families §8): gate_up_proj_blocks [E, 2I, G, 16]
    // with gate = rows 2j and up = rows 2j+1 (HF's [..., ::2] / [..., 1::2]
    // after its transpose), down_proj_blocks [E, H, I/32, 16]. The checkpoint
    // source shows mlp.experts.E.{gate,up,down}_proj.weight, each value the
    // MXFP4 decode by hand (low nibble first, times 2^(scale - 127)).
    waste_test::TempDir dir;
    constexpr int E = 2, I = 32, H = 64;
    std::string gu_blocks(E * 2 * I * (H / 32) * 16, '\0'), gu_scales(E * 2 * I * (H / 32), '\0');
    std::string dn_blocks(E * H * (I / 32) * 16, '\0'), dn_scales(E * H * (I / 32), '\0');
    for (size_t i = 0; i < gu_blocks.size(); ++i) gu_blocks[i] = static_cast<char>(i * 37 + 11);
    for (size_t i = 0; i < gu_scales.size(); ++i) gu_scales[i] = static_cast<char>(118 + i % 17);
    for (size_t i = 0; i < dn_blocks.size(); ++i) dn_blocks[i] = static_cast<char>(i * 53 + 7);
    for (size_t i = 0; i < dn_scales.size(); ++i) dn_scales[i] = static_cast<char>(121 + i % 11);
    const std::string p = "model.layers.0.mlp.experts.";
    write_checkpoint(dir / "c", {{p + "gate_up_proj_blocks", "U8", {E, 2 * I, H / 32, 16}, gu_blocks},
                                 {p + "gate_up_proj_scales", "U8", {E, 2 * I, H / 32}, gu_scales},
                                 {p + "down_proj_blocks", "U8", {E, H, I / 32, 16}, dn_blocks},
                                 {p + "down_proj_scales", "U8", {E, H, I / 32}, dn_scales},
                                 {p + "down_proj_bias", "F32", {E, H}, std::string(E * H * 4, '\0')}});
    const Checkpoint ck = Checkpoint::open(dir / "c");
    const std::unique_ptr<WeightSource> source = checkpoint_source(ck);
    EXPECT_FALSE(source->has(p + "gate_up_proj"));  // the fused names are hidden
    EXPECT_TRUE(source->has(p + "down_proj_bias"));
    auto by_hand = [](const std::string& blocks, const std::string& scales, size_t row, size_t cols, size_t i) {
        const uint8_t byte = static_cast<uint8_t>(blocks[row * cols / 2 + i / 2]);
        const int nibble = i % 2 ? byte >> 4 : byte & 15;
        const int e = static_cast<uint8_t>(scales[row * (cols / 32) + i / 32]);
        return static_cast<float>(fp4_table[nibble] * std::ldexp(1.0, e - 127));
    };
    for (int e = 0; e < E; ++e) {
        const std::string x = p + std::to_string(e) + ".";
        ASSERT_EQ(source->info(x + "gate_proj.weight").shape, (std::vector<int64_t>{I, H}));
        ASSERT_EQ(source->info(x + "down_proj.weight").shape, (std::vector<int64_t>{H, I}));
        std::vector<float> gate(I * H), up(I * H), down(H * I), up_tail(3 * H);
        source->read_rows(x + "gate_proj.weight", 0, I, gate);
        source->read_rows(x + "up_proj.weight", 0, I, up);
        source->read_rows(x + "down_proj.weight", 0, H, down);
        source->read_rows(x + "up_proj.weight", I - 3, 3, up_tail);  // a row range inside the view
        for (int j = 0; j < I; ++j)
            for (int i = 0; i < H; ++i) {
                ASSERT_TRUE(same_float(gate[j * H + i], by_hand(gu_blocks, gu_scales, e * 2 * I + 2 * j, H, i))) << e << " " << j;
                ASSERT_TRUE(same_float(up[j * H + i], by_hand(gu_blocks, gu_scales, e * 2 * I + 2 * j + 1, H, i))) << e << " " << j;
            }
        EXPECT_TRUE(std::equal(up_tail.begin(), up_tail.end(), up.begin() + (I - 3) * H));
        for (int r = 0; r < H; ++r)
            for (int i = 0; i < I; ++i)
                ASSERT_TRUE(same_float(down[r * I + i], by_hand(dn_blocks, dn_scales, e * H + r, I, i))) << e << " " << r;
    }
}

TEST(Checkpoint, GptOssExpertsDecodeBitExactToTheReferenceDecoder) {
    // A gpt-oss checkpoint as the release stores it (hf_families: MXFP4
    // blocks/scales, fused, gate/up interleaved) and, beside it, the experts as
    // the PyTorch reference decodes them (waste_ref/gpt_oss.py mxfp4_decode,
    // HF's convert_moe_packed_tensors and transpose; gate = [..., ::2]): the
    // converter's per-expert matrices equal them bit for bit.
    waste_test::TempDir dir;
    const std::string ckpt = (dir / "ckpt").string(), expected = (dir / "expected.safetensors").string();
    const std::string command =
        "cd '" + (waste_test::source_dir() / "python").string() + "' && /usr/bin/python3 -c \""
        "from waste_ref import hf_families, gpt_oss, safetensors_io as st\n"
        "cfg = gpt_oss.tiny_config()\n"
        "_, sd = hf_families.write_checkpoint('" + ckpt + "', 'gpt_oss', cfg, seed=9)\n"
        "parts = []\n"
        "for l in range(cfg['num_hidden_layers']):\n"
        "    x = 'model.layers.%d.mlp.experts.' % l\n"
        "    for e in range(cfg['num_local_experts']):\n"
        "        gu, down = sd[x + 'gate_up_proj'][e], sd[x + 'down_proj'][e]\n"
        "        for kind, m in (('gate_proj', gu[:, 0::2].T), ('up_proj', gu[:, 1::2].T), ('down_proj', down.T)):\n"
        "            a = m.contiguous().numpy().astype('<f4')\n"
        "            parts.append(('%s%d.%s.weight' % (x, e, kind), 'F32', list(a.shape), a.tobytes()))\n"
        "st.write('" + expected + "', parts)\n\"";
    std::string output;
    ASSERT_EQ(waste_test::run_command(command, &output), 0) << command << "\n" << output;
    const Checkpoint ck = Checkpoint::open(ckpt);
    const std::unique_ptr<WeightSource> source = checkpoint_source(ck);
    const SafetensorsFile want = SafetensorsFile::open(expected);
    size_t compared = 0;
    for (const TensorEntry& t : want.tensors()) {
        ASSERT_TRUE(source->has(t.name)) << t.name;
        ASSERT_EQ(source->info(t.name).shape, t.shape) << t.name;
        std::vector<float> ref(t.numel), got(t.numel);
        want.read(t, 0, ref.data(), t.bytes);
        source->read_rows(t.name, 0, static_cast<uint64_t>(t.shape[0]), got);
        for (size_t i = 0; i < ref.size(); ++i) ASSERT_TRUE(same_float(got[i], ref[i])) << t.name << " element " << i;
        ++compared;
    }
    EXPECT_EQ(compared, 2u * 8u * 3u);  // 2 layers x 8 experts x gate/up/down
}

// =============================================================================
// round trip against the PyTorch reference's synthetic HF checkpoints

class HfSynthRoundTrip : public ::testing::TestWithParam<std::string> {};

TEST_P(HfSynthRoundTrip, EveryWeightDecodesBitExactToTheWriters) {
    const std::string format = GetParam();
    const bool k3 = format != "bf16-kimi-linear";
    const std::string experts = k3 ? format : "bf16";
    auto synth = hf_synth(std::string("--model ") + (k3 ? "k3" : "kimi-linear") + " --experts-format " + experts +
                          (format == "mxfp4" ? " --scales-apart" : ""));
    const Checkpoint ck = Checkpoint::open(synth->dir);
    const SafetensorsFile expected = SafetensorsFile::open(synth->expected);

    // The same logical names, in natural order.
    std::vector<std::string> names;
    for (const TensorEntry& t : expected.tensors()) names.push_back(t.name);
    std::sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) { return natural_less(a, b); });
    ASSERT_EQ(ck.names(), names);

    size_t encoded = 0;
    for (const std::string& name : ck.names()) {
        const TensorInfo& info = ck.info(name);
        const TensorEntry& want = *expected.find(name);
        ASSERT_EQ(info.shape, want.shape) << name;
        std::vector<float> ref(want.numel);
        expected.read(want, 0, ref.data(), want.bytes);
        const std::vector<float> got = ck.read_f32(name);
        for (size_t i = 0; i < ref.size(); ++i) ASSERT_TRUE(same_float(got[i], ref[i])) << name << " element " << i;
        if (info.encoding != WeightEncoding::plain) ++encoded;
    }

    const json& text = ck.config();
    EXPECT_EQ(ck.has_nested_text_config(), k3);
    if (k3) {
        EXPECT_EQ(ck.architecture(), "KimiK3ForConditionalGeneration");
        EXPECT_EQ(text.at("architectures")[0], "KimiK3ForCausalLM");
        EXPECT_TRUE(ck.has("language_model.model.layers.1.block_sparse_moe.routed_expert_down_proj.weight"));
        EXPECT_TRUE(ck.has("vision_tower.patch_embed.proj.weight"));
    } else {
        EXPECT_EQ(ck.architecture(), "KimiLinearForCausalLM");
    }
    const int64_t layers = text.at("num_hidden_layers"), first = text.at("first_k_dense_replace");
    const int64_t experts_n = text.at("num_experts");
    const std::string prefix = k3 ? "language_model." : "";
    const std::string w1 = prefix + "model.layers.1.block_sparse_moe.experts.0.w1.weight";
    ASSERT_TRUE(ck.has(w1));
    const size_t expert_weights = static_cast<size_t>((layers - first) * experts_n * 3);
    const std::map<std::string, WeightEncoding> want_encoding = {{"bf16", WeightEncoding::plain},
                                                                 {"fp8", WeightEncoding::fp8_block},
                                                                 {"mxfp4", WeightEncoding::mxfp4},
                                                                 {"int4", WeightEncoding::int4_pack}};
    EXPECT_EQ(ck.info(w1).encoding, want_encoding.at(experts));
    if (experts == "bf16") {
        EXPECT_EQ(encoded, 0u);
    }
    if (experts == "mxfp4" || experts == "int4") {
        EXPECT_EQ(encoded, expert_weights);
    }
    if (experts == "fp8") {
        EXPECT_GT(encoded, expert_weights);  // the trunk linears too, as FP8 releases
        EXPECT_EQ(ck.info(prefix + "model.layers.0.mlp.gate_proj.weight").encoding, WeightEncoding::fp8_block);
        EXPECT_EQ(ck.info(prefix + "model.embed_tokens.weight").encoding, WeightEncoding::plain);
        EXPECT_EQ(ck.info(prefix + "lm_head.weight").encoding, WeightEncoding::plain);
    }

    // Shards: every physical tensor exactly once; every logical weight listed
    // under each shard holding one of its parts.
    size_t physical = 0;
    std::set<std::string> listed;
    for (const ShardInfo& s : ck.shards()) {
        physical += s.tensors.size();
        listed.insert(s.weights.begin(), s.weights.end());
        EXPECT_GT(s.bytes, 0u);
    }
    EXPECT_EQ(listed.size(), ck.names().size());
    size_t parts = 0;
    for (const std::string& name : ck.names()) parts += ck.info(name).parts.size();
    EXPECT_EQ(physical, parts);
    if (format == "mxfp4") {
        // --scales-apart: each expert's scale sits in the last shard, its packed codes elsewhere.
        const TensorInfo& info = ck.info(w1);
        EXPECT_NE(info.part_shards[0], info.part_shards[1]);
        const ShardInfo& last = ck.shards().back();
        EXPECT_NE(std::find(last.weights.begin(), last.weights.end(), w1), last.weights.end());
        ck.release_shard(last.file);  // closes; a later read reopens
        EXPECT_EQ(ck.read_f32(w1).size(), ck.info(w1).numel);
    }
}

INSTANTIATE_TEST_SUITE_P(Formats, HfSynthRoundTrip,
                         ::testing::Values("bf16-kimi-linear", "bf16", "fp8", "mxfp4", "int4"),
                         [](const auto& info) {
                             std::string n = info.param;
                             std::replace(n.begin(), n.end(), '-', '_');
                             return n;
                         });

// =============================================================================
// speed: reading one K3 routed expert (gate/up 3072x3584, down 3584x3072) from
// a checkpoint in each storage format, through Checkpoint::read_f32 (pread
// from the page cache + decode + finiteness check). Median of 5, one line of
// JSON per format.

TEST(DecodeSpeed, DISABLED_K3Expert) {
    waste_test::TempDir dir;
    const int64_t I = 3072, lat = 3584;
    const std::vector<std::pair<int64_t, int64_t>> shapes = {{I, lat}, {I, lat}, {lat, I}};
    std::mt19937 rng(1);
    auto random_bytes = [&](size_t n, uint8_t mask, uint8_t add) {
        std::string b(n, '\0');
        for (char& c : b) c = static_cast<char>((rng() & mask) + add);
        return b;
    };
    for (const std::string format : {"bf16", "fp8", "mxfp4", "int4"}) {
        std::vector<RawTensor> t;
        for (size_t k = 0; k < 3; ++k) {
            const auto [o, i] = shapes[k];
            const std::string w = fmt::format("w{}.weight", k);
            if (format == "bf16") {
                std::string b(static_cast<size_t>(o * i * 2), '\0');
                for (size_t j = 0; j < b.size(); j += 2) {
                    b[j] = static_cast<char>(rng());
                    b[j + 1] = static_cast<char>(0x3C + (rng() & 1) + (rng() & 0x80));  // |w| ~ 2^-7..2^-5
                }
                t.push_back({w, "BF16", {o, i}, b});
            } else if (format == "fp8") {
                t.push_back({w, "F8_E4M3", {o, i}, random_bytes(o * i, 0xF7, 0)});  // 0x77 mask: never 0x7f/0xff
                t.push_back({w + "_scale_inv", "F32", {(o + 127) / 128, (i + 127) / 128},
                             std::string(static_cast<size_t>((o + 127) / 128 * ((i + 127) / 128) * 4), '\0')});
            } else if (format == "mxfp4") {
                t.push_back({w + "_packed", "U8", {o, i / 2}, random_bytes(o * i / 2, 0xFF, 0)});
                t.push_back({w + "_scale", "U8", {o, i / 32}, random_bytes(o * i / 32, 7, 118)});
            } else {
                t.push_back({w + "_packed", "I32", {o, i / 8}, random_bytes(o * i / 2, 0xFF, 0)});
                t.push_back({w + "_scale", "BF16", {o, i / 32}, bf16_bytes(std::vector<float>(o * i / 32, 0.01f))});
            }
        }
        write_checkpoint(dir / format, t);
        const Checkpoint ck = Checkpoint::open(dir / format);
        std::vector<std::vector<float>> out;
        for (const auto& [o, i] : shapes) out.emplace_back(static_cast<size_t>(o * i));
        std::vector<double> ms;
        for (int rep = 0; rep < 6; ++rep) {
            const auto a = std::chrono::steady_clock::now();
            for (size_t k = 0; k < 3; ++k) ck.read_f32(fmt::format("w{}.weight", k), out[k]);
            if (rep > 0) ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
        }
        std::sort(ms.begin(), ms.end());
        std::printf("{\"bench\":\"checkpoint_read_k3_expert\",\"format\":\"%s\",\"weights\":%lld,\"median_ms\":%.2f}\n",
                    format.c_str(), static_cast<long long>(3 * I * lat), ms[ms.size() / 2]);
    }
}
