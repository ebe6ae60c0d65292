// gguf_test.cpp — the GGUF header reader (format/gguf.h): a file written here
// byte by byte (GGUF v3 as gguf-py writes it) is read back whole, and every
// lie a hostile file can tell is refused naming the key or tensor, never a
// crash or an allocation the file dictates. No tolerance: values are exact.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "format/gguf.h"
#include "test_support.h"

namespace {

using waste::format::GgufFile;
using waste::format::GgufLimits;
using waste::format::GgufType;
using waste::format::parse_gguf;

// A GGUF file assembled field by field.
struct Writer {
    std::vector<uint8_t> bytes;
    template <typename T>
    Writer& put(T value) {
        const auto* p = reinterpret_cast<const uint8_t*>(&value);
        bytes.insert(bytes.end(), p, p + sizeof value);
        return *this;
    }
    Writer& str(const std::string& s) {
        put<uint64_t>(s.size());
        bytes.insert(bytes.end(), s.begin(), s.end());
        return *this;
    }
    Writer& header(uint64_t tensors, uint64_t keys, uint32_t version = 3) {
        bytes.insert(bytes.end(), {'G', 'G', 'U', 'F'});
        return put<uint32_t>(version).put<uint64_t>(tensors).put<uint64_t>(keys);
    }
    Writer& kv_u32(const std::string& key, uint32_t v) { return str(key).put<uint32_t>(4).put<uint32_t>(v); }
    Writer& kv_str(const std::string& key, const std::string& v) { return str(key).put<uint32_t>(8).str(v); }
    Writer& tensor(const std::string& name, std::vector<uint64_t> shape, uint32_t type, uint64_t offset) {
        str(name).put<uint32_t>(static_cast<uint32_t>(shape.size()));
        for (uint64_t d : shape) put<uint64_t>(d);
        return put<uint32_t>(type).put<uint64_t>(offset);
    }
    Writer& pad_to(size_t alignment) {
        while (bytes.size() % alignment) bytes.push_back(0);
        return *this;
    }
    Writer& data(size_t n, uint8_t fill = 0x5a) {
        bytes.insert(bytes.end(), n, fill);
        return *this;
    }
};

// A small valid file: metadata of every kind, an f32 matrix and a q4_K one.
Writer valid_file() {
    Writer w;
    w.header(2, 5)
        .kv_str("general.architecture", "qwen3moe")
        .kv_u32("qwen3moe.block_count", 48)
        .str("tokenizer.ggml.tokens").put<uint32_t>(9).put<uint32_t>(8).put<uint64_t>(3).str("a").str("bc").str("<|im_end|>")
        .str("tokenizer.ggml.scores").put<uint32_t>(9).put<uint32_t>(6).put<uint64_t>(2).put<float>(0.5f).put<float>(-1.25f)
        .str("general.flag").put<uint32_t>(7).put<uint8_t>(1);
    w.tensor("token_embd.weight", {8, 3}, 0, 0);             // f32: 96 bytes, padded to 96
    w.tensor("blk.0.ffn_down_exps.weight", {256, 2, 4}, 12, 96);  // q4_K: 8 blocks x 144
    w.pad_to(32).data(96).data(8 * 144);
    return w;
}

std::string refusal(const std::vector<uint8_t>& bytes, const GgufLimits& limits = {}) {
    std::string message;
    const waste_status status = waste_test::status_of([&] { parse_gguf(bytes, "x.gguf", limits); }, &message);
    EXPECT_EQ(status, WASTE_ERR_FORMAT) << message;
    return message;
}

TEST(Gguf, AValidFileReadsBackWhole) {
    const Writer w = valid_file();
    const GgufFile f = parse_gguf(w.bytes, "x.gguf");
    EXPECT_EQ(f.version, 3u);
    EXPECT_EQ(f.alignment, 32u);
    EXPECT_EQ(f.require_string("general.architecture"), "qwen3moe");
    EXPECT_EQ(f.require_uint("qwen3moe.block_count"), 48u);
    const auto* tokens = f.find("tokenizer.ggml.tokens");
    ASSERT_NE(tokens, nullptr);
    EXPECT_EQ(tokens->type, GgufType::array);
    EXPECT_EQ(tokens->element, GgufType::string);
    EXPECT_EQ(tokens->texts, (std::vector<std::string>{"a", "bc", "<|im_end|>"}));
    EXPECT_EQ(f.find("tokenizer.ggml.scores")->reals, (std::vector<double>{0.5, -1.25}));
    EXPECT_EQ(f.find("general.flag")->integer, 1);
    ASSERT_EQ(f.tensors.size(), 2u);
    const auto* down = f.tensor("blk.0.ffn_down_exps.weight");
    ASSERT_NE(down, nullptr);
    EXPECT_EQ(down->type.name, "q4_K");
    EXPECT_EQ(down->shape, (std::vector<uint64_t>{256, 2, 4}));
    EXPECT_EQ(down->bytes, 8u * 144);
    EXPECT_EQ(f.data_offset % 32, 0u);
    EXPECT_EQ(f.tensor("token_embd.weight")->offset, f.data_offset);
    EXPECT_EQ(down->offset, f.data_offset + 96);
    EXPECT_EQ(down->offset + down->bytes, w.bytes.size());
    // Missing keys and keys of another kind are refused by name.
    std::string message;
    EXPECT_EQ(waste_test::status_of([&] { f.require_uint("qwen3moe.expert_count"); }, &message), WASTE_ERR_FORMAT);
    EXPECT_NE(message.find("qwen3moe.expert_count"), std::string::npos) << message;
    EXPECT_EQ(waste_test::status_of([&] { f.require_uint("general.architecture"); }, &message), WASTE_ERR_FORMAT);
    EXPECT_NE(message.find("general.architecture"), std::string::npos) << message;
}

TEST(Gguf, EveryTruncationIsRefusedSayingTheFileIsTooShort) {
    // Cut at every byte: the refusal says the file ends too soon, or that a
    // count it states needs more bytes than it has.
    const Writer w = valid_file();
    for (size_t size = 0; size < w.bytes.size(); ++size) {
        const std::vector<uint8_t> cut(w.bytes.begin(), w.bytes.begin() + static_cast<ptrdiff_t>(size));
        const std::string message = refusal(cut);
        EXPECT_TRUE(message.find("end") != std::string::npos || message.find("hold") != std::string::npos)
            << size << ": " << message;
    }
}

TEST(Gguf, LiesInTheHeaderAreRefusedByName) {
    struct Case {
        const char* what;
        Writer file;
        const char* named;
    };
    std::vector<Case> cases;
    cases.push_back({"bad magic", Writer{{'G', 'G', 'M', 'L', 3, 0, 0, 0}}, "not a GGUF"});
    cases.push_back({"version 1", Writer{}.header(0, 0, 1), "version 1"});
    cases.push_back({"version 9", Writer{}.header(0, 0, 9), "version 9"});
    cases.push_back({"big-endian", Writer{}.header(0, 0, 0x03000000), "big-endian"});
    cases.push_back({"huge key count", Writer{}.header(0, 1ull << 60), "metadata entries"});
    cases.push_back({"huge tensor count", Writer{}.header(1ull << 60, 0), "tensors"});
    cases.push_back({"huge string", Writer{}.header(0, 1).put<uint64_t>(1ull << 62).data(16), "string of"});
    cases.push_back({"string past the end", Writer{}.header(0, 1).put<uint64_t>(100).data(10), "past the file's end"});
    cases.push_back({"unknown value type", Writer{}.header(0, 1).str("k").put<uint32_t>(13).put<uint32_t>(0), "value type 13"});
    cases.push_back({"array of arrays", Writer{}.header(0, 1).str("k").put<uint32_t>(9).put<uint32_t>(9).put<uint64_t>(1), "array of arrays"});
    cases.push_back({"huge array", Writer{}.header(0, 1).str("k").put<uint32_t>(9).put<uint32_t>(4).put<uint64_t>(1ull << 40), "'k' is an array"});
    cases.push_back({"array past the end", Writer{}.header(0, 1).str("k").put<uint32_t>(9).put<uint32_t>(10).put<uint64_t>(1000).data(16), "rest of the file"});
    cases.push_back({"duplicate key", Writer{}.header(0, 2).kv_u32("a.b", 1).kv_u32("a.b", 2), "'a.b' appears twice"});
    cases.push_back({"empty key", Writer{}.header(0, 1).kv_u32("", 1), "is empty"});
    cases.push_back({"bool of 2", Writer{}.header(0, 1).str("k").put<uint32_t>(7).put<uint8_t>(2), "bool of value 2"});
    cases.push_back({"u64 above i64", Writer{}.header(0, 1).str("k").put<uint32_t>(10).put<uint64_t>(~0ull), "'k' holds"});
    cases.push_back({"alignment not u32", Writer{}.header(0, 1).kv_str("general.alignment", "32"), "general.alignment is string"});
    cases.push_back({"alignment 24", Writer{}.header(0, 1).kv_u32("general.alignment", 24), "general.alignment is 24"});
    cases.push_back({"alignment 0", Writer{}.header(0, 1).kv_u32("general.alignment", 0), "general.alignment is 0"});
    cases.push_back({"five dimensions", Writer{}.header(1, 0).tensor("t", {32, 1, 1, 1, 1}, 0, 0).data(200), "5 dimensions"});
    cases.push_back({"unknown type", Writer{}.header(1, 0).tensor("t", {32}, 4, 0).data(200), "ggml type 4"});
    cases.push_back({"row not a block multiple", Writer{}.header(1, 0).tensor("t", {100}, 12, 0).data(200), "not a multiple"});
    cases.push_back({"shape overflows", Writer{}.header(1, 0).tensor("t", {1ull << 40, 1ull << 40}, 0, 0).data(200), "overflows"});
    cases.push_back({"dimension above i64", Writer{}.header(1, 0).tensor("t", {~0ull}, 0, 0).data(200), "dimension 0"});
    cases.push_back({"long name", Writer{}.header(1, 0).tensor(std::string(64, 'n'), {32}, 0, 0).data(200), "name of 64 bytes"});
    cases.push_back({"duplicate tensor", Writer{}.header(2, 0).tensor("t", {8}, 0, 0).tensor("t", {8}, 0, 32).pad_to(32).data(64), "'t' appears twice"});
    cases.push_back({"gap between tensors", Writer{}.header(2, 0).tensor("a", {8}, 0, 0).tensor("b", {8}, 0, 64).pad_to(32).data(128), "must be at 32"});
    cases.push_back({"overlapping tensors", Writer{}.header(2, 0).tensor("a", {16}, 0, 0).tensor("b", {8}, 0, 32).pad_to(32).data(128), "must be at 64"});
    cases.push_back({"unaligned offset", Writer{}.header(1, 0).tensor("a", {8}, 0, 4).pad_to(32).data(64), "must be at 0"});
    cases.push_back({"tensor past the end", Writer{}.header(1, 0).tensor("a", {1024}, 0, 0).pad_to(32).data(64), "ends past the file's end"});
    // The first tensor's padding already passes the end (found by gguf_fuzz:
    // an unsigned subtraction wrapped and let the second through).
    cases.push_back({"padding past the end", Writer{}.header(2, 0).tensor("a", {9}, 0, 0).tensor("b", {8}, 0, 64).pad_to(32).data(40), "'b' (32 bytes at byte"});
    for (const Case& c : cases) {
        SCOPED_TRACE(c.what);
        const std::string message = refusal(c.file.bytes);
        EXPECT_NE(message.find(c.named), std::string::npos) << message;
        EXPECT_NE(message.find("x.gguf"), std::string::npos) << message;
    }
}

TEST(Gguf, TheLimitsBoundWhatTheFileMayMakeUsHold) {
    const Writer w = valid_file();
    GgufLimits limits;
    limits.max_string_bytes = 5;
    EXPECT_NE(refusal(w.bytes, limits).find("at most 5 are read"), std::string::npos);
    limits = {};
    limits.max_array_elements = 2;
    EXPECT_NE(refusal(w.bytes, limits).find("'tokenizer.ggml.tokens' is an array of 3 elements; at most 2"), std::string::npos);
    limits = {};
    limits.max_metadata_bytes = 40;
    EXPECT_NE(refusal(w.bytes, limits).find("passes 40 bytes"), std::string::npos);
}

TEST(Gguf, AFileOnDiskReadsAsItsBytesDo) {
    const Writer w = valid_file();
    const waste_test::TempDir dir;
    const std::string path = (dir / "x.gguf").string();
    {
        FILE* f = std::fopen(path.c_str(), "wb");
        ASSERT_NE(f, nullptr);
        ASSERT_EQ(std::fwrite(w.bytes.data(), 1, w.bytes.size(), f), w.bytes.size());
        std::fclose(f);
    }
    const GgufFile f = waste::format::read_gguf(path);
    EXPECT_EQ(f.tensors.size(), 2u);
    EXPECT_EQ(f.tensor("blk.0.ffn_down_exps.weight")->offset, parse_gguf(w.bytes, "x").tensor("blk.0.ffn_down_exps.weight")->offset);
    std::string message;
    EXPECT_EQ(waste_test::status_of([&] { waste::format::read_gguf(path + ".missing"); }, &message), WASTE_ERR_IO);
    EXPECT_NE(message.find("x.gguf.missing"), std::string::npos) << message;
}

std::string upper(std::string_view s) {
    std::string u(s);
    for (char& c : u) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return u;
}

// llama.cpp's own gguf-py (from the release the npm package ships, cloned
// from its git bundle) writes a file of every value type, a custom
// alignment and ten tensor types, and its GGUFReader says what the file
// holds (tools/llama-cpp/gguf_oracle.py); the engine must read the same.
// Exact: names, types, integers, strings, offsets; floats as the JSON
// numbers Python prints (shortest round-trip text, so exact too).
TEST(GgufOracle, WhatLlamaCppsGgufPyWritesAndReadsTheEngineReadsAlike) {
    const std::filesystem::path source = WASTE_SOURCE_DIR;
    const auto bundle = source / "tools/llama-cpp/node_modules/node-llama-cpp/llama/gitRelease.bundle";
    std::string output;
    const bool numpy = waste_test::run_command("/usr/bin/python3 -c 'import numpy' 2>&1", &output) == 0;
    WASTE_REQUIRE_ORACLE(std::filesystem::exists(bundle) && numpy,
                         "llama.cpp's gguf-py needs tools/llama-cpp's npm packages and python3-numpy (scripts/setup.sh)");
    const waste_test::TempDir dir;
    const auto src = dir / "llama.cpp";
    ASSERT_EQ(waste_test::run_command("git -c advice.detachedHead=false clone -q --no-checkout '" + bundle.string() + "' '" +
                                          src.string() + "' 2>&1 && git -C '" + src.string() + "' checkout -q HEAD -- gguf-py 2>&1",
                                      &output),
              0)
        << output;
    const std::string file = (dir / "oracle.gguf").string();
    std::string json_text;
    ASSERT_EQ(waste_test::run_command("/usr/bin/python3 '" + (source / "tools/llama-cpp/gguf_oracle.py").string() + "' '" +
                                          (src / "gguf-py").string() + "' '" + file + "' 2>/dev/null",
                                      &json_text),
              0)
        << json_text;
    const nlohmann::json oracle = nlohmann::json::parse(json_text);
    const GgufFile f = waste::format::read_gguf(file);

    EXPECT_EQ(f.alignment, oracle["alignment"].get<uint64_t>());
    EXPECT_EQ(f.data_offset, oracle["data_offset"].get<uint64_t>());
    static const char* py_types[] = {"UINT8", "INT8", "UINT16", "INT16", "UINT32", "INT32", "FLOAT32",
                                     "BOOL",  "STRING", "ARRAY", "UINT64", "INT64", "FLOAT64"};
    ASSERT_EQ(f.metadata.size(), oracle["fields"].size());
    for (const auto& [key, field] : oracle["fields"].items()) {
        SCOPED_TRACE(key);
        const auto* v = f.find(key);
        ASSERT_NE(v, nullptr);
        EXPECT_EQ(py_types[static_cast<uint32_t>(v->type)], field["types"][0].get<std::string>());
        const GgufType scalar = v->type == GgufType::array ? v->element : v->type;
        if (v->type == GgufType::array) {
            EXPECT_EQ(py_types[static_cast<uint32_t>(v->element)], field["types"][1].get<std::string>());
        }
        nlohmann::json ours;
        const auto one = [&](size_t i) -> nlohmann::json {
            const bool array = v->type == GgufType::array;
            switch (scalar) {
                case GgufType::string: return array ? v->texts[i] : v->text;
                case GgufType::f32: case GgufType::f64: return array ? v->reals[i] : v->real;
                case GgufType::boolean: return (array ? v->integers[i] : v->integer) != 0;
                default: return array ? v->integers[i] : v->integer;
            }
        };
        if (v->type == GgufType::array) {
            ours = nlohmann::json::array();
            for (size_t i = 0; i < v->count(); ++i) ours.push_back(one(i));
        } else {
            ours = one(0);
        }
        EXPECT_EQ(ours, field["value"]) << ours.dump() << " vs " << field["value"].dump();
    }
    ASSERT_EQ(f.tensors.size(), oracle["tensors"].size());
    for (size_t i = 0; i < f.tensors.size(); ++i) {
        const auto& t = f.tensors[i];
        const auto& o = oracle["tensors"][i];
        SCOPED_TRACE(t.name);
        EXPECT_EQ(t.name, o["name"].get<std::string>());
        EXPECT_EQ(upper(t.type.name), o["type"].get<std::string>());
        EXPECT_EQ(t.shape, o["shape"].get<std::vector<uint64_t>>());
        EXPECT_EQ(t.offset, o["offset"].get<uint64_t>());
        EXPECT_EQ(t.bytes, o["bytes"].get<uint64_t>());
    }
}

}  // namespace
