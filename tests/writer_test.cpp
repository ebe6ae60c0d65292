// writer_test.cpp — format::ContainerWriter: what it writes, the reader reads
// back exactly; files are committed tmp -> rename with the manifest last; the
// same input gives the same bytes.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <random>

#include <nlohmann/json.hpp>

#include "format/container.h"
#include "format/container_writer.h"
#include "format/f16.h"
#include "format/trunk_codec.h"
#include "platform/crc32.h"
#include "platform/error.h"
#include "synth/synth.h"
#include "test_support.h"

namespace fs = std::filesystem;
using namespace waste;
using format::TrunkFormat;
using nlohmann::ordered_json;

namespace {

// A small MoE model: 2 layers (layer 0 dense, layer 1 MoE), all MLA. The
// expert shapes have fewer than 64 rows in gate/up (32), so the index layout's
// padding rows are exercised.
ordered_json small_config() {
    return ordered_json{{"model_type", "kimi_linear"},
                        {"hidden_size", 64},
                        {"num_hidden_layers", 2},
                        {"first_k_dense_replace", 1},
                        {"intermediate_size", 64},
                        {"moe_intermediate_size", 32},
                        {"num_experts", 4},
                        {"num_experts_per_token", 2},
                        {"num_attention_heads", 2},
                        {"qk_nope_head_dim", 8},
                        {"qk_rope_head_dim", 8},
                        {"v_head_dim", 8},
                        {"kv_lora_rank", 16},
                        {"vocab_size", 100}};
}

struct TensorCase {
    std::string name;
    TrunkFormat fmt;
    std::vector<int64_t> shape;
    uint32_t group = 128;
    int chunks = 1;          // rows given in this many add_trunk_rows calls
    std::vector<float> values;
};

struct ExpertCase {
    std::vector<uint8_t> gate, up, down;
    std::vector<uint16_t> scales;
};

struct Written {
    std::vector<TensorCase> tensors;
    std::vector<std::vector<uint16_t>> codebooks;
    std::vector<ExpertCase> experts;
};

std::vector<TensorCase> tensor_cases(std::mt19937& random) {
    std::vector<TensorCase> cases = {
        {"model.norm.weight", TrunkFormat::f32, {100}, 128, 1, {}},
        {"model.layers.0.self_attn.q_conv1d.weight", TrunkFormat::f32, {8, 1, 4}, 128, 1, {}},
        {"model.embed_tokens.weight", TrunkFormat::q8g, {50, 200}, 128, 1, {}},          // cols not a multiple of the group
        {"model.layers.0.mlp.gate_proj.weight", TrunkFormat::q4g, {33, 130}, 128, 1, {}},
        {"model.layers.0.mlp.up_proj.weight", TrunkFormat::q3g, {7, 300}, 64, 1, {}},    // non-default group
        {"model.layers.0.mlp.down_proj.weight", TrunkFormat::q4g, {40, 256}, 128, 3, {}},  // in row blocks
        {"lm_head.weight", TrunkFormat::q8g, {2, 3, 128}, 128, 2, {}},                   // 3-D: rows = 6
    };
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (TensorCase& c : cases) {
        size_t count = 1;
        for (int64_t dim : c.shape) count *= static_cast<size_t>(dim);
        c.values.resize(count);
        for (float& v : c.values) v = normal(random);
        if (c.fmt != TrunkFormat::f32) c.values[0] = 0.0f;  // a zero and a tiny value: scales stay finite
        if (c.values.size() > 1) c.values[1] = 1e-7f;
    }
    return cases;
}

void write_tensors(format::ContainerWriter& writer, const std::vector<TensorCase>& tensors) {
    for (const TensorCase& c : tensors) {
        if (c.chunks == 1) {
            writer.add_trunk_tensor(c.name, c.fmt, c.shape, c.values, c.group);
            continue;
        }
        const format::TrunkTensor& layout = writer.begin_trunk_tensor(c.name, c.fmt, c.shape, c.group);
        const uint64_t rows = layout.rows, cols = layout.cols;
        uint64_t done = 0;
        for (int k = 0; k < c.chunks; ++k) {
            const uint64_t take = k + 1 == c.chunks ? rows - done : rows / c.chunks;
            writer.add_trunk_rows(std::span<const float>(c.values).subspan(done * cols, take * cols));
            done += take;
        }
        writer.end_trunk_tensor();
    }
}

// Writes the whole small container; stops before finish() when asked.
Written write_small_container(const fs::path& dir, format::ContainerWriterOptions options = {}, bool finish = true,
                              uint32_t seed = 7) {
    std::mt19937 random(seed);
    Written w;
    w.tensors = tensor_cases(random);
    format::ContainerSpec spec{"kimi_linear", "", small_config(), format::standard_expert_quant("VQ3R")};
    format::ContainerWriter writer(dir.string(), spec, options);
    write_tensors(writer, w.tensors);

    const format::ExpertQuant quant = format::standard_expert_quant("VQ3R");
    std::uniform_int_distribution<int> byte(0, 255);
    std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
    // a gap record first: the layer's books need not start at 0
    for (int b = 0; b < 1 + 3 * quant.stages; ++b) {
        std::vector<uint16_t> book(static_cast<size_t>(quant.entries) * quant.vec_dim);
        for (uint16_t& v : book) v = format::f32_to_f16(unit(random));
        book[0] = 0x0001;  // a subnormal centroid must survive
        EXPECT_EQ(writer.add_codebook(book), static_cast<uint32_t>(b));
        w.codebooks.push_back(std::move(book));
    }
    const format::ExpertLayout& layout = writer.expert_layout();
    writer.begin_bank(1, 1);
    for (int e = 0; e < 4; ++e) {
        ExpertCase x;
        for (auto* part : {&x.gate, &x.up, &x.down}) part->resize(part == &x.down ? layout.down.index_bytes
                                                                  : layout.gate.index_bytes);
        for (auto* part : {&x.gate, &x.up, &x.down})
            for (uint8_t& v : *part) v = static_cast<uint8_t>(byte(random));
        x.scales.resize(layout.scale_count);
        for (uint16_t& s : x.scales) s = format::f32_to_f16(0.01f + 0.1f * (unit(random) + 1.0f));
        writer.add_expert(e, x.gate, x.up, x.down, x.scales);
        w.experts.push_back(std::move(x));
    }
    writer.end_bank();
    writer.add_file("specials.json", R"([{"id": 98, "text": "[BOS]"}])");
    if (finish) writer.finish();
    return w;
}

std::vector<std::string> tmp_files(const fs::path& dir) {
    std::vector<std::string> found;
    for (const auto& entry : fs::directory_iterator(dir))
        if (entry.path().extension() == ".tmp") found.push_back(entry.path().filename().string());
    return found;
}

// name -> bytes of every file in a directory
std::map<std::string, std::string> directory_contents(const fs::path& dir) {
    std::map<std::string, std::string> files;
    for (const auto& entry : fs::directory_iterator(dir))
        files[entry.path().filename().string()] = waste_test::read_file(entry.path());
    return files;
}

template <typename Body>
waste_status status_of(Body&& body) {
    try {
        body();
    } catch (const Error& error) {
        return error.status();
    }
    return WASTE_OK;
}

}  // namespace

TEST(Writer, TrunkTensorsReadBackAsQuantizeThenDequantize) {
    waste_test::TempDir dir;
    const Written w = write_small_container(dir.path());
    auto container = format::Container::open(dir.path().string(), {});
    container->load_trunk();
    for (const TensorCase& c : w.tensors) {
        SCOPED_TRACE(c.name);
        const format::LoadedTensor& loaded = container->require(c.name);
        EXPECT_EQ(loaded.info->fmt, c.fmt);
        EXPECT_EQ(loaded.info->shape, c.shape);
        // The expected values: the codec's own quantise -> dequantise of the input.
        format::TrunkTensor expected_layout = *loaded.info;
        const std::vector<uint8_t> encoded = format::quantize_tensor(c.fmt, c.group, expected_layout.rows,
                                                                     expected_layout.cols, c.values);
        ASSERT_EQ(encoded.size(), expected_layout.bytes);
        const std::span<const uint8_t> payload(encoded.data(), expected_layout.payload_bytes);
        const std::span<const uint8_t> scales(encoded.data() + expected_layout.payload_bytes, expected_layout.scale_bytes);
        const std::vector<float> got = loaded.dequantize();
        std::vector<float> row(expected_layout.cols);
        for (uint64_t r = 0; r < expected_layout.rows; ++r) {
            format::dequantize_row(expected_layout, payload, scales, r, row);
            for (uint64_t i = 0; i < expected_layout.cols; ++i)
                ASSERT_EQ(got[r * expected_layout.cols + i], row[i]) << "row " << r << " col " << i;
        }
        if (c.fmt == TrunkFormat::f32) {
            EXPECT_EQ(got, c.values);
        }
    }
    // Packed back to back from offset 0, each payload then its scales.
    uint64_t cursor = 0;
    for (const format::TrunkTensor& t : container->manifest().trunk) {
        EXPECT_EQ(t.offset, cursor) << t.name;
        if (t.fmt != TrunkFormat::f32) {
            EXPECT_EQ(t.scale_offset, t.offset + t.payload_bytes) << t.name;
        }
        cursor += t.bytes;
    }
    EXPECT_EQ(fs::file_size(dir / "trunk.bin"), cursor);
}

TEST(Writer, ExpertRecordsAndCodebooksReadBackExactly) {
    waste_test::TempDir dir;
    const Written w = write_small_container(dir.path());
    format::ContainerOptions options;
    options.verify_checksums = true;
    auto container = format::Container::open(dir.path().string(), options);
    const format::ExpertLayout& layout = container->expert_layout();
    EXPECT_EQ(layout.record_bytes, 8192u);
    EXPECT_EQ(container->bank(1).codebook_base, 1u);
    EXPECT_EQ(container->codebook_records(), w.codebooks.size());
    for (uint32_t b = 1; b < w.codebooks.size(); ++b) {
        const std::span<const float> book = container->codebook(b);
        for (size_t i = 0; i < book.size(); ++i) ASSERT_EQ(book[i], format::f16_to_f32(w.codebooks[b][i])) << b;
    }
    platform::AlignedBuffer record(layout.record_bytes);
    for (int e = 0; e < 4; ++e) {
        SCOPED_TRACE(e);
        container->read_expert(1, e, record.span());  // header checks and (verify_checksums) the CRC
        format::verify_expert_checksum(record.span(), 1, e, layout);
        const ExpertCase& x = w.experts[e];
        const uint8_t* p = record.data();
        EXPECT_EQ(0, std::memcmp(p + layout.gate_off, x.gate.data(), x.gate.size()));
        EXPECT_EQ(0, std::memcmp(p + layout.up_off, x.up.data(), x.up.size()));
        EXPECT_EQ(0, std::memcmp(p + layout.down_off, x.down.data(), x.down.size()));
        EXPECT_EQ(0, std::memcmp(p + layout.scales_off, x.scales.data(), x.scales.size() * 2));
        for (uint64_t i = layout.payload_end; i < layout.record_bytes; ++i) ASSERT_EQ(p[i], 0) << "padding byte " << i;
        const format::ExpertRecordHeader h = format::decode_expert_header(p);
        EXPECT_EQ(h.fmt, 4);
        EXPECT_EQ(h.codebook_id, 1);
        EXPECT_EQ(h.crc32, platform::crc32(p + 48, layout.payload_end - 48));
    }
}

TEST(Writer, ManifestIsWrittenLastAndNoTmpIsLeft) {
    waste_test::TempDir dir;
    write_small_container(dir.path(), {}, /*finish=*/false);
    // The writer died before finish(): what it had published (specials.json)
    // is removed again, the rest was never renamed (banks are renamed by
    // finish()), and there is no manifest.
    EXPECT_FALSE(fs::exists(dir / "specials.json"));
    EXPECT_FALSE(fs::exists(dir / "experts-L1.bin"));
    EXPECT_FALSE(fs::exists(dir / "trunk.bin"));
    EXPECT_FALSE(fs::exists(dir / "manifest.json"));
    EXPECT_TRUE(tmp_files(dir.path()).empty());

    waste_test::TempDir done;
    {
        format::ContainerSpec spec{"kimi_linear", "", small_config(), format::standard_expert_quant("VQ3R")};
        std::mt19937 random(1);
        format::ContainerWriter writer(done.path().string(), spec);
        write_tensors(writer, tensor_cases(random));
        const format::ExpertQuant quant = format::standard_expert_quant("VQ3R");
        for (int b = 0; b < 3 * quant.stages; ++b)
            writer.add_codebook(std::vector<uint16_t>(static_cast<size_t>(quant.entries) * quant.vec_dim, 0x3C00));
        writer.begin_bank(1, 0);
        const format::ExpertLayout& l = writer.expert_layout();
        for (int e = 0; e < 4; ++e)
            writer.add_expert(e, std::vector<uint8_t>(l.gate.index_bytes), std::vector<uint8_t>(l.up.index_bytes),
                              std::vector<uint8_t>(l.down.index_bytes), std::vector<uint16_t>(l.scale_count, 0x3C00));
        writer.end_bank();
        // an ended bank waits for finish() to be fsynced and renamed
        EXPECT_TRUE(fs::exists(done / "experts-L1.bin.tmp"));
        EXPECT_FALSE(fs::exists(done / "manifest.json"));
        EXPECT_TRUE(fs::exists(done / "trunk.bin.tmp"));    // still being written
        writer.finish();
        EXPECT_TRUE(fs::exists(done / "manifest.json"));
        EXPECT_TRUE(fs::exists(done / "trunk.bin"));
        EXPECT_TRUE(fs::exists(done / "codebooks.bin"));
    }
    EXPECT_TRUE(tmp_files(done.path()).empty());
    EXPECT_NO_THROW(format::Container::open(done.path().string(), {}));
}

TEST(Writer, AFailedWriteLeavesNoTmpAndNoManifest) {
    waste_test::TempDir dir;
    {
        format::ContainerSpec spec{"kimi_linear", "", small_config(), format::standard_expert_quant("VQ3R")};
        format::ContainerWriter writer(dir.path().string(), spec);
        std::mt19937 random(3);
        write_tensors(writer, tensor_cases(random));
        writer.begin_trunk_tensor("model.layers.1.input_layernorm.weight", TrunkFormat::f32, {64});
        // a bug in the caller: too many rows
        EXPECT_EQ(status_of([&] { writer.add_trunk_rows(std::vector<float>(128)); }), WASTE_ERR_INVALID_ARGUMENT);
        EXPECT_EQ(status_of([&] { writer.finish(); }), WASTE_ERR_INVALID_ARGUMENT);  // tensor still open
    }
    EXPECT_TRUE(tmp_files(dir.path()).empty());
    EXPECT_FALSE(fs::exists(dir / "manifest.json"));
}

TEST(Writer, ReplacesTheContainerInADirectoryAndNothingElse) {
    waste_test::TempDir dir;
    write_small_container(dir.path());
    waste_test::write_file(dir / "notes.txt", "mine");
    waste_test::write_file(dir / "chat.json", "{}");  // an optional file of the old container
    {
        format::ContainerSpec spec{"kimi_linear", "", small_config(), format::standard_expert_quant("VQ3R")};
        format::ContainerWriter writer(dir.path().string(), spec);
        // The old container is un-committed before anything is written.
        EXPECT_FALSE(fs::exists(dir / "manifest.json"));
        EXPECT_FALSE(fs::exists(dir / "experts-L1.bin"));
        EXPECT_FALSE(fs::exists(dir / "chat.json"));
        EXPECT_FALSE(fs::exists(dir / "specials.json"));
    }
    EXPECT_EQ(waste_test::read_file(dir / "notes.txt"), "mine");
}

TEST(Writer, RefusesWhatTheReaderWouldRefuse) {
    waste_test::TempDir dir;
    format::ContainerSpec spec{"kimi_linear", "", small_config(), format::standard_expert_quant("VQ3R")};
    format::ContainerWriter writer(dir.path().string(), spec);
    const format::ExpertLayout& l = writer.expert_layout();
    std::vector<float> ones(64, 1.0f);
    writer.add_trunk_tensor("model.norm.weight", TrunkFormat::f32, {64}, ones);
    EXPECT_EQ(status_of([&] { writer.add_trunk_tensor("model.norm.weight", TrunkFormat::f32, {64}, ones); }),
              WASTE_ERR_INVALID_ARGUMENT);  // twice
    EXPECT_EQ(status_of([&] { writer.begin_trunk_tensor("x", TrunkFormat::q4g, {1, 2, 3, 4, 5}); }),
              WASTE_ERR_INVALID_ARGUMENT);  // 5 dims
    EXPECT_EQ(status_of([&] { writer.begin_bank(1, 0); }), WASTE_ERR_INVALID_ARGUMENT);  // no codebooks yet
    EXPECT_EQ(status_of([&] { writer.begin_bank(0, 0); }), WASTE_ERR_INVALID_ARGUMENT);  // dense layer
    const format::ExpertQuant quant = format::standard_expert_quant("VQ3R");
    const std::vector<uint16_t> book(static_cast<size_t>(quant.entries) * quant.vec_dim, 0x3C00);
    for (int b = 0; b < 3 * quant.stages; ++b) writer.add_codebook(book);
    std::vector<uint16_t> infinite = book;
    infinite[5] = 0x7C00;
    EXPECT_EQ(status_of([&] { writer.add_codebook(infinite); }), WASTE_ERR_INVALID_ARGUMENT);
    writer.begin_bank(1, 0);
    const std::vector<uint8_t> gate(l.gate.index_bytes), down(l.down.index_bytes);
    const std::vector<uint16_t> scales(l.scale_count, 0x3C00);
    EXPECT_EQ(status_of([&] { writer.add_expert(1, gate, gate, down, scales); }), WASTE_ERR_INVALID_ARGUMENT);  // order
    EXPECT_EQ(status_of([&] { writer.add_expert(0, gate, gate, gate, scales); }), WASTE_ERR_INVALID_ARGUMENT);  // size
    writer.add_expert(0, gate, gate, down, scales);
    EXPECT_EQ(status_of([&] { writer.end_bank(); }), WASTE_ERR_INVALID_ARGUMENT);  // 1 of 4 experts
    EXPECT_EQ(status_of([&] { writer.add_file("experts-L3.bin", "x"); }), WASTE_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(status_of([&] { writer.add_file("../escape", "x"); }), WASTE_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(status_of([] { format::standard_expert_quant("VQ9"); }), WASTE_ERR_INVALID_ARGUMENT);
}

TEST(Writer, BufferSizeAndIoModeDoNotChangeABit) {
    waste_test::TempDir reference, small_buffers, buffered;
    write_small_container(reference.path());
    // 4 KiB buffers: every file crosses many buffers, through the background writer.
    format::ContainerWriterOptions small{true, 4096};
    write_small_container(small_buffers.path(), small);
    format::ContainerWriterOptions page_cache{false, 8192};
    write_small_container(buffered.path(), page_cache);
    EXPECT_EQ(directory_contents(reference.path()), directory_contents(small_buffers.path()));
    EXPECT_EQ(directory_contents(reference.path()), directory_contents(buffered.path()));
}

TEST(Writer, ConverterFormatConvention) {
    const std::vector<int64_t> vector{7168}, small{128, 128}, big{7168, 7168}, conv{12288, 1, 4};
    EXPECT_EQ(format::converter_trunk_format("model.norm.weight", vector), TrunkFormat::f32);
    EXPECT_EQ(format::converter_trunk_format("model.layers.0.self_attn.o_proj.weight", small), TrunkFormat::f32);
    EXPECT_EQ(format::converter_trunk_format("model.layers.0.self_attn.o_proj.weight", big), TrunkFormat::q4g);
    EXPECT_EQ(format::converter_trunk_format("model.layers.0.self_attn.q_conv1d.weight", conv), TrunkFormat::f32);
    EXPECT_EQ(format::converter_trunk_format("language_model.model.embed_tokens.weight", big), TrunkFormat::q8g);
    EXPECT_EQ(format::converter_trunk_format("language_model.lm_head.weight", big), TrunkFormat::q8g);
    // --trunk-matrices q8: what the rule stores Q4G becomes Q8G; nothing else moves.
    EXPECT_EQ(format::converter_trunk_format("model.layers.0.self_attn.o_proj.weight", big, false, TrunkFormat::q8g),
              TrunkFormat::q8g);
    EXPECT_EQ(format::converter_trunk_format("model.norm.weight", vector, false, TrunkFormat::q8g), TrunkFormat::f32);
    EXPECT_EQ(format::converter_trunk_format("model.layers.0.self_attn.o_proj.weight", small, false, TrunkFormat::q8g),
              TrunkFormat::f32);
}

TEST(Writer, SyntheticContainersAreByteIdenticalForTheSameSeed) {
    for (const char* preset : {"tiny", "tiny-k3"}) {
        SCOPED_TRACE(preset);
        waste_test::TempDir first, second, other_seed;
        synth::SynthOptions options;
        options.preset = preset;
        options.seed = 42;
        synth::write_synthetic_container(first.path().string(), options);
        synth::write_synthetic_container(second.path().string(), options);
        const auto a = directory_contents(first.path()), b = directory_contents(second.path());
        EXPECT_EQ(a, b);
        EXPECT_TRUE(a.count("manifest.json") && a.count("trunk.bin") && a.count("experts-L1.bin") &&
                    a.count("tokenizer.model"));
        options.seed = 43;
        synth::write_synthetic_container(other_seed.path().string(), options);
        const auto c = directory_contents(other_seed.path());
        EXPECT_EQ(a.at("manifest.json"), c.at("manifest.json"));  // same shapes and offsets
        EXPECT_NE(a.at("trunk.bin"), c.at("trunk.bin"));
        EXPECT_NE(a.at("codebooks.bin"), c.at("codebooks.bin"));
        EXPECT_NE(a.at("experts-L1.bin"), c.at("experts-L1.bin"));
        EXPECT_TRUE(tmp_files(first.path()).empty());
    }
}
