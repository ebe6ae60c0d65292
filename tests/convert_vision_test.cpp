// convert_vision_test.cpp — K3's vision tower through `waste convert`
// (vision.md §1, convert/vision_layout.h), on the PyTorch reference's
// synthetic K3 checkpoint (python/waste_ref/hf_synth.py: a 2-block tower with
// K3's tensor names and release shapes, and a preprocessor_config.json).
//
// Tolerances: an F32-stored tensor holds the bf16 source exactly (0); a Q8G
// one (group 128, absmax scale) is within half a step of its group's
// absmax/127 per value, and its relative RMS error is under 1% (vision.md
// measured 0.64% on K3's own tower).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "convert/converter.h"
#include "convert/safetensors.h"
#include "format/container.h"
#include "format/trunk_codec.h"
#include "platform/error.h"
#include "test_images.h"
#include "test_support.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using waste::format::TrunkFormat;

waste::convert::ConvertOptions quick_options() {
    waste::convert::ConvertOptions options;
    options.jobs = 2;
    options.sample_experts = 2;
    options.train_vectors = 1024;
    options.iterations = 2;
    return options;
}

const waste_test::SynthCheckpoint& k3_checkpoint() {
    static const auto synth = waste_test::hf_synth("--model k3 --shards 2");
    return *synth;
}

std::vector<uint8_t> read_bytes(const fs::path& path, uint64_t offset, uint64_t size) {
    std::ifstream in(path, std::ios::binary);
    in.seekg(static_cast<std::streamoff>(offset));
    std::vector<uint8_t> out(size);
    in.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(size));
    return out;
}

// The stored tensor dequantised, row-major over its stored shape.
std::vector<float> stored_values(const fs::path& dir, const waste::format::TrunkTensor& t) {
    const auto payload = read_bytes(dir / "trunk.bin", t.offset, t.payload_bytes);
    const auto scales = read_bytes(dir / "trunk.bin", t.scale_offset, t.scale_bytes);
    std::vector<float> out(t.rows * t.cols);
    for (uint64_t r = 0; r < t.rows; ++r)
        waste::format::dequantize_row(t, payload, scales, r, std::span<float>(out.data() + r * t.cols, t.cols));
    return out;
}

void expect_convert_fails(const fs::path& src, const fs::path& out, const std::string& needle) {
    try {
        waste::convert::convert_checkpoint(src.string(), out.string(), quick_options());
        ADD_FAILURE() << "converted; expected a refusal naming " << needle;
    } catch (const waste::Error& e) {
        EXPECT_EQ(e.status(), WASTE_ERR_FORMAT) << e.what();
        EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
    EXPECT_FALSE(fs::exists(out / "manifest.json"));
}

TEST(ConvertVision, TowerStoredFlattenedAtEightBitsWithItsVisionJson) {
    const auto& synth = k3_checkpoint();
    waste_test::TempDir tmp;
    const json summary = waste::convert::convert_checkpoint(synth.dir.string(), (tmp / "out").string(), quick_options());
    EXPECT_TRUE(summary.at("vision").get<bool>());
    EXPECT_TRUE(summary.at("skipped").empty()) << summary.at("skipped").dump();
    EXPECT_TRUE(summary.at("warnings").empty()) << summary.at("warnings").dump();

    // vision.json: the release's vision_config without `_` keys, the pad id
    // from the outer config, the patch budget, and the preprocessor's values.
    const json release = json::parse(waste_test::read_file(synth.dir / "config.json"));
    const json vision = json::parse(waste_test::read_file(tmp / "out" / "vision.json"));
    EXPECT_EQ(vision.at("vt_hidden_size"), 112);
    EXPECT_EQ(vision.at("qkv_hidden_size"), 48);
    EXPECT_FALSE(vision.contains("_attn_implementation"));
    EXPECT_EQ(vision.at("media_placeholder_token_id"), release.at("media_placeholder_token_id"));
    EXPECT_EQ(vision.at("text_hidden_size"), release.at("text_config").at("hidden_size"));
    EXPECT_EQ(vision.at("max_patches"), 1024);
    EXPECT_EQ(vision.at("image_mean"), json::parse("[0.48, 0.5, 0.52]"));
    EXPECT_EQ(vision.at("image_std"), json::parse("[0.25, 0.5, 0.75]"));
    EXPECT_EQ(vision.at("in_patch_limit"), 65536);

    const auto container = waste::format::Container::open((tmp / "out").string(), {});
    const auto& m = container->manifest();
    const auto expected = waste::convert::SafetensorsFile::open(synth.expected);
    size_t vision_tensors = 0, q8g = 0;
    for (const auto& t : m.trunk) {
        if (!t.name.starts_with("vision_tower.") && !t.name.starts_with("mm_projector.")) continue;
        ++vision_tensors;
        EXPECT_FALSE(container->is_text_tensor(t)) << t.name << " must stay out of a text-only run";
        const auto* want_entry = expected.find(t.name);
        ASSERT_NE(want_entry, nullptr) << t.name;
        std::vector<float> want(want_entry->numel);
        expected.read(*want_entry, 0, want.data(), want_entry->bytes);
        // Stored flattened by use: the release's values in the same order.
        ASSERT_EQ(want.size(), t.rows * t.cols) << t.name;
        const std::vector<float> got = stored_values(tmp / "out", t);
        if (t.shape.size() == 1) {
            EXPECT_EQ(t.fmt, TrunkFormat::f32) << t.name;
        }
        if (t.fmt == TrunkFormat::f32) {
            EXPECT_EQ(got, want) << t.name;
            continue;
        }
        EXPECT_EQ(t.fmt, TrunkFormat::q8g) << t.name << ": the tower is never stored at 4 bits";
        ++q8g;
        double e2 = 0, w2 = 0;
        for (uint64_t r = 0; r < t.rows; ++r)
            for (uint64_t g = 0; g < t.cols; g += t.group) {
                const uint64_t end = std::min<uint64_t>(t.cols, g + t.group);
                float absmax = 0;
                for (uint64_t i = g; i < end; ++i) absmax = std::max(absmax, std::fabs(want[r * t.cols + i]));
                for (uint64_t i = g; i < end; ++i) {
                    const double d = static_cast<double>(got[r * t.cols + i]) - want[r * t.cols + i];
                    ASSERT_LE(std::fabs(d), absmax / 127.0 * 0.5 * 1.01 + 1e-6) << t.name << " row " << r << " col " << i;
                    e2 += d * d;
                    w2 += static_cast<double>(want[r * t.cols + i]) * want[r * t.cols + i];
                }
            }
        EXPECT_LT(std::sqrt(e2 / w2), 0.01) << t.name;
    }
    EXPECT_EQ(vision_tensors, 2u + 2u * 6u + 1u + 3u);
    EXPECT_EQ(q8g, 2u) << "the patch embedding (112 x 588) and proj.0 (448 x 448) pass the 65,536-value rule";
    const auto* patch = m.find("vision_tower.patch_embed.proj.weight");
    ASSERT_NE(patch, nullptr);
    EXPECT_EQ(patch->shape, (std::vector<int64_t>{112, 588}));
    EXPECT_EQ(m.find("vision_tower.patch_embed.pos_emb.weight")->shape, (std::vector<int64_t>{15, 112}));
}

// The converted checkpoint runs end to end: `waste run --image` opens its
// tower, reads an image and answers.
TEST(ConvertVision, TheConvertedTowerRunsThroughWasteRunWithAnImage) {
    const auto& synth = k3_checkpoint();
    waste_test::TempDir tmp;
    waste::convert::convert_checkpoint(synth.dir.string(), (tmp / "out").string(), quick_options());
    waste_test::write_file(tmp / "small.bmp", waste_test::random_bmp(16, 8, 1));
    std::string output;
    const std::string command = waste_test::cli_path().string() + " run '" + (tmp / "out").string() + "' --ids '1 2 3' --image '" +
                                (tmp / "small.bmp").string() + "' -n 2 --temp 0 --json --ctx 256";
    ASSERT_EQ(waste_test::run_command(command, &output), 0) << output;
    EXPECT_NE(output.find("small.bmp: 1 image tokens]"), std::string::npos) << output << "(16 x 8 is the 2 x 2 minimum grid: one token)";
    EXPECT_NE(output.find("\"stop_reason\""), std::string::npos) << output;
}

TEST(ConvertVision, MissingPreprocessorConfigIsAWarningNamingTheValuesUsed) {
    const auto& synth = k3_checkpoint();
    waste_test::TempDir tmp;
    fs::copy(synth.dir, tmp / "src");
    fs::remove(tmp / "src" / "preprocessor_config.json");
    const json summary = waste::convert::convert_checkpoint((tmp / "src").string(), (tmp / "out").string(), quick_options());
    ASSERT_EQ(summary.at("warnings").size(), 1u);
    const std::string warning = summary.at("warnings")[0];
    EXPECT_NE(warning.find("preprocessor_config.json is missing"), std::string::npos) << warning;
    EXPECT_NE(warning.find("[0.5, 0.5, 0.5]"), std::string::npos) << warning;
    const json vision = json::parse(waste_test::read_file(tmp / "out" / "vision.json"));
    EXPECT_EQ(vision.at("image_mean"), json::parse("[0.5, 0.5, 0.5]"));
}

// A config that does not describe the checkpoint's tower is refused before
// anything is written, naming the tensor or the key.
TEST(ConvertVision, ATowerTheConfigDoesNotDescribeIsRefused) {
    const auto& synth = k3_checkpoint();
    waste_test::TempDir tmp;
    fs::copy(synth.dir, tmp / "src");
    const json release = json::parse(waste_test::read_file(synth.dir / "config.json"));
    const auto with = [&](const std::string& key, const json& value) {
        json edited = release;
        edited["vision_config"][key] = value;
        waste_test::write_file(tmp / "src" / "config.json", edited.dump());
    };
    with("vt_num_hidden_layers", 3);
    expect_convert_fails(tmp / "src", tmp / "a", "vision_tower.encoder.blocks.2.norm0.weight is missing");
    with("vt_num_hidden_layers", 1);
    expect_convert_fails(tmp / "src", tmp / "b", "vision_tower.encoder.blocks.1.mlp.fc0.weight is not part of the vision tower");
    with("qkv_hidden_size", 96);
    expect_convert_fails(tmp / "src", tmp / "c", "vision_tower.encoder.blocks.0.wqkv.weight");
    with("init_pos_emb_height", 5);
    expect_convert_fails(tmp / "src", tmp / "d", "vision_tower.patch_embed.pos_emb.weight");
    with("vt_num_attention_heads", 0);
    expect_convert_fails(tmp / "src", tmp / "e", "vision_config.vt_num_attention_heads");
    json no_pad = release;
    no_pad.erase("media_placeholder_token_id");
    waste_test::write_file(tmp / "src" / "config.json", no_pad.dump());
    expect_convert_fails(tmp / "src", tmp / "f", "media_placeholder_token_id");
}

}  // namespace
