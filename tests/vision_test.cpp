// vision_test.cpp — the vision tower (vision.md §1, §3) on a tiny synthetic
// tower with awkward shapes (synth_vision.h): against the float64 PyTorch
// reference (python/waste_ref/vision.py, written from the spec), the same
// bits at 1, 2 and 3 threads, a text-only open that ignores the tower, and
// hostile vision.json / tensor cases refused with the key or tensor named.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "format/container.h"
#include "format/container_writer.h"
#include "format/vision_config.h"
#include "kernels/trunk_matmul.h"
#include "model/vision_attention.h"
#include "model/vision_tower.h"
#include "platform/error.h"
#include "platform/thread_pool.h"
#include "synth/synth.h"
#include "test_support.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using waste::format::Container;
using waste::format::VisionConfig;
using waste::model::VisionTower;

// One tiny-k3 container with the synth's tiny tower (stored grid 6 × 4),
// written once for the suite.
class VisionTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        dir_ = new waste_test::TempDir();
        waste::synth::SynthOptions options;
        options.preset = "tiny-k3";
        options.overrides = {{"vision", true}};
        waste::synth::write_synthetic_container(path(), options);
    }
    static void TearDownTestSuite() {
        delete dir_;
        dir_ = nullptr;
    }
    static std::string path() { return (*dir_ / "vision.waste").string(); }

    static std::unique_ptr<Container> open() { return Container::open(path(), {.want_direct_io = false}); }
    static VisionConfig config(const Container& container) {
        return *waste::format::read_vision_config(container.directory(), container.config());
    }
    static std::vector<float> pixels(int gh, int gw, uint32_t seed) {
        std::mt19937 random(seed);
        std::uniform_real_distribution<float> value(-1.0f, 1.0f);  // (v/255 - 0.5)/0.5 spans [-1, 1]
        std::vector<float> out(static_cast<size_t>(gh) * gw * waste::format::vision_patch_values);
        for (float& v : out) v = value(random);
        return out;
    }

    static waste_test::TempDir* dir_;
};
waste_test::TempDir* VisionTest::dir_ = nullptr;

struct Image {
    int gh = 0, gw = 0;
    std::vector<float> pixels, engine;
};

// max|engine − reference| / max|reference| per image, the reference
// computed in float64 by one python3 run for all images (torch's import
// costs more than the tower).
std::vector<double> reference_errors(const std::string& container, const std::vector<Image>& images, std::string* failure) {
    waste_test::TempDir dir;
    std::string command = fmt::format("cd '{}' && /usr/bin/python3 -m waste_ref.vision '{}'",
                                      (waste_test::source_dir() / "python").string(), container);
    for (size_t i = 0; i < images.size(); ++i) {
        const Image& image = images[i];
        const fs::path in = dir / fmt::format("pixels{}.f32", i);
        waste_test::write_file(in, std::string(reinterpret_cast<const char*>(image.pixels.data()),
                                               image.pixels.size() * sizeof(float)));
        command += fmt::format(" '{}:{}:{}:{}'", in.string(), image.gh, image.gw, (dir / fmt::format("e{}.f64", i)).string());
    }
    std::string output;
    if (waste_test::run_command(command, &output) != 0) {
        *failure = command + "\n" + output;
        return {};
    }
    std::vector<double> errors;
    for (size_t i = 0; i < images.size(); ++i) {
        const std::vector<float>& engine = images[i].engine;
        const std::string bytes = waste_test::read_file(dir / fmt::format("e{}.f64", i));
        if (bytes.size() != engine.size() * sizeof(double)) {
            *failure = fmt::format("reference wrote {} bytes, engine has {} values", bytes.size(), engine.size());
            return {};
        }
        std::vector<double> reference(engine.size());
        std::memcpy(reference.data(), bytes.data(), bytes.size());
        double max_difference = 0, max_reference = 0;
        for (size_t j = 0; j < engine.size(); ++j) {
            max_difference = std::max(max_difference, std::fabs(engine[j] - reference[j]));
            max_reference = std::max(max_reference, std::fabs(reference[j]));
        }
        errors.push_back(max_difference / max_reference);
    }
    return errors;
}

bool torch_installed() {
    std::string output;
    return waste_test::run_command("/usr/bin/python3 -c 'import torch, numpy'", &output) == 0;
}

TEST_F(VisionTest, MatchesTheFloat64Reference) {
    WASTE_REQUIRE_ORACLE(torch_installed(), "python3 with torch and numpy is not installed");
    const auto container = open();
    const auto tower = VisionTower::load(*container, config(*container));
    waste::platform::ThreadPool pool(2);
    // (6, 4): the stored grid, used as is; (4, 8): resized, height shrunk and
    // width doubled (a swapped resize shows); (2, 2): the smallest image.
    std::vector<Image> images;
    for (auto [gh, gw] : {std::pair{6, 4}, std::pair{4, 8}, std::pair{2, 2}}) {
        Image image{gh, gw, pixels(gh, gw, static_cast<uint32_t>(gh * 100 + gw)), {}};
        image.engine = tower->embed(pool, image.pixels, gh, gw);
        ASSERT_EQ(image.engine.size(), static_cast<size_t>(gh * gw / 4) * container->config().hidden);
        images.push_back(std::move(image));
    }
    std::string failure;
    const std::vector<double> errors = reference_errors(path(), images, &failure);
    ASSERT_TRUE(failure.empty()) << failure;
    for (size_t i = 0; i < images.size(); ++i) {
        EXPECT_LE(errors[i], 1e-5) << "grid " << images[i].gh << "x" << images[i].gw;
        std::printf("grid %dx%d: relative error %.3g against the float64 reference\n", images[i].gh, images[i].gw, errors[i]);
    }
}

TEST_F(VisionTest, SameBitsAtAnyThreadCount) {
    const auto container = open();
    const auto tower = VisionTower::load(*container, config(*container));
    const std::vector<float> in = pixels(4, 8, 7);
    std::vector<float> first;
    for (unsigned threads : {1u, 2u, 3u}) {
        waste::platform::ThreadPool pool(threads);
        const std::vector<float> e = tower->embed(pool, in, 4, 8);
        if (first.empty()) first = e;
        ASSERT_EQ(0, std::memcmp(e.data(), first.data(), e.size() * sizeof(float))) << threads << " threads";
    }
}

// Queries in blocks (the score scratch bound, query_block) give what one
// block of every query gives, within the kernel's rounding.
TEST(VisionAttention, QueryBlocksAgreeWithOneBlock) {
    const size_t L = 32, Q = 48;
    const int heads = 4, hd = 12;
    std::mt19937 random(3);
    std::normal_distribution<float> value(0.0f, 1.0f);
    std::vector<float> qkv(L * 3 * Q);
    for (float& v : qkv) v = value(random);
    waste::platform::ThreadPool pool(2);
    std::vector<float> whole, blocked;
    waste::model::vision::attend(pool, qkv, L, Q, heads, hd, L, whole);
    waste::model::vision::attend(pool, qkv, L, Q, heads, hd, 5, blocked);
    ASSERT_EQ(whole.size(), blocked.size());
    for (size_t i = 0; i < whole.size(); ++i) EXPECT_NEAR(whole[i], blocked[i], 1e-6f) << i;
    EXPECT_EQ(waste::model::vision::query_block(1024), 1024u);
    EXPECT_EQ(waste::model::vision::query_block(size_t{1} << 20), 4u);
}

TEST_F(VisionTest, TextOnlyOpenNeitherReadsNorCountsTheTower) {
    waste_test::TempDir plain;
    waste::synth::SynthOptions options;
    options.preset = "tiny-k3";
    waste::synth::write_synthetic_container((plain / "text.waste").string(), options);
    const auto text = Container::open((plain / "text.waste").string(), {.want_direct_io = false});
    const auto vision = open();
    // tiny-k3 alone carries one 64 × 588 tower tensor outside the prefix: neither counts it.
    EXPECT_EQ(vision->resident_trunk_bytes(), text->resident_trunk_bytes());
    vision->load_trunk();
    EXPECT_EQ(vision->tensor("vision_tower.encoder.final_layernorm.weight"), nullptr);
}

TEST_F(VisionTest, RefusesABadGrid) {
    const auto container = open();
    const auto tower = VisionTower::load(*container, config(*container));
    waste::platform::ThreadPool pool(1);
    std::string message;
    EXPECT_EQ(waste_test::status_of([&] { tower->embed(pool, pixels(3, 4, 1), 3, 4); }, &message),
              WASTE_ERR_INVALID_ARGUMENT);
    EXPECT_NE(message.find("3x4"), std::string::npos) << message;
    EXPECT_EQ(waste_test::status_of([&] { tower->embed(pool, pixels(2, 2, 1), 2, 4); }, &message),
              WASTE_ERR_INVALID_ARGUMENT);
    EXPECT_NE(message.find("pixel values"), std::string::npos) << message;
}

// vision.json rules of §1.1: each refused, the key and the value named.
TEST_F(VisionTest, HostileVisionJson) {
    const auto container = open();
    const json good = json::parse(waste_test::read_file(fs::path(path()) / "vision.json"));
    const struct {
        const char* key;
        json value;
        const char* named;
    } cases[] = {
        {"qkv_hidden_size", 50, "qkv_hidden_size: 50 is not a multiple"},
        {"qkv_hidden_size", 40, "head dim 40 / 4 = 10 is not a multiple of 4"},
        {"vt_hidden_size", (1 << 20) + 1, "vt_hidden_size: 1048577 is out of range"},
        {"vt_num_attention_heads", 0, "vt_num_attention_heads: 0 is out of range"},
        {"vt_intermediate_size", (1 << 22) + 1, "vt_intermediate_size: 4194305"},
        {"vt_num_hidden_layers", 257, "vt_num_hidden_layers: 257"},
        {"init_pos_emb_height", 0, "init_pos_emb_height: 0"},
        {"init_pos_emb_width", 65537, "init_pos_emb_width: 65537"},
        {"text_hidden_size", 64, "text_hidden_size: 64 is not the text model's hidden_size"},
        {"patch_size", 16, "patch_size: 16 is not 14"},
        {"media_placeholder_token_id", container->config().vocab, "media_placeholder_token_id"},
        {"media_placeholder_token_id", nullptr, "required key media_placeholder_token_id is missing"},
        {"max_patches", 3, "max_patches: 3 is out of range"},
        {"image_std", {0.5, 0.0, 0.5}, "image_std[1]: 0.0"},
        {"image_mean", {0.5, "x", 0.5}, "image_mean[1]: \"x\""},
        {"image_mean", {0.5, 0.5}, "image_mean: expected 3 numbers"},
        {"vt_hidden_size", 40.5, "vt_hidden_size: expected an integer"},
    };
    for (const auto& c : cases) {
        json edited = good;
        if (c.value.is_null()) edited.erase(c.key);
        else edited[c.key] = c.value;
        std::string message;
        EXPECT_EQ(waste_test::status_of([&] { waste::format::parse_vision_config(edited, container->config(), "vision.json"); },
                                        &message),
                  WASTE_ERR_FORMAT)
            << c.key;
        EXPECT_NE(message.find(c.named), std::string::npos) << c.key << ": " << message;
    }
    // Not JSON at all, on disk.
    waste_test::TempDir dir;
    waste_test::write_file(dir / "vision.json", "{\"vt_hidden_size\": ");
    std::string message;
    EXPECT_EQ(waste_test::status_of([&] { waste::format::read_vision_config(dir.path().string(), container->config()); },
                                    &message),
              WASTE_ERR_FORMAT);
    EXPECT_NE(message.find("vision.json"), std::string::npos) << message;
}

// Tensor rules of §1.2 against an edited trunk index.
TEST_F(VisionTest, HostileVisionTensors) {
    const auto container = open();
    const VisionConfig vision = config(*container);
    auto refused = [&](const std::function<void(waste::format::Manifest&)>& edit, const std::string& named) {
        waste::format::Manifest manifest = container->manifest();
        edit(manifest);
        std::string message;
        EXPECT_EQ(waste_test::status_of([&] { waste::format::check_vision_tensors(manifest, vision); }, &message),
                  WASTE_ERR_FORMAT)
            << named;
        EXPECT_NE(message.find(named), std::string::npos) << message;
    };
    auto entry = [](waste::format::Manifest& m, const std::string& name) -> waste::format::TrunkTensor& {
        for (auto& t : m.trunk)
            if (t.name == name) return t;
        throw std::runtime_error("no tensor " + name);
    };
    EXPECT_NO_THROW(waste::format::check_vision_tensors(container->manifest(), vision));
    refused([&](auto& m) { entry(m, "mm_projector.proj.2.weight").name = "mm_projector.proj.3.weight"; },
            "vision tensor mm_projector.proj.2.weight is missing");
    refused([&](auto& m) { entry(m, "vision_tower.encoder.blocks.1.norm1.weight").fmt = waste::format::TrunkFormat::q8g; },
            "vision_tower.encoder.blocks.1.norm1.weight: a norm must be F32, got Q8G");
    refused([&](auto& m) {
        auto& t = entry(m, "vision_tower.patch_embed.proj.weight");
        t.shape = {40, 3, 14, 14};
        t.bytes = waste::format::trunk_tensor_bytes(t.fmt, t.shape, t.group);
        waste::format::derive_trunk_layout(t, t.name);
    }, "vision_tower.patch_embed.proj.weight: Q8G stored as [40, 3, 14, 14] has rows of 14 values, but its matmul reads rows of 588");
    refused([&](auto& m) {
        auto& t = entry(m, "vision_tower.encoder.blocks.0.wqkv.weight");
        t.shape = {120, 40};  // 3·D instead of 3·Q rows: the Q = D mistake
        t.bytes = waste::format::trunk_tensor_bytes(t.fmt, t.shape, t.group);
        waste::format::derive_trunk_layout(t, t.name);
    }, "vision_tower.encoder.blocks.0.wqkv.weight: shape [120, 40] is not the expected [144, 40]");
    refused([&](auto& m) { m.tensor_prefix = "vision_"; }, "is inside the text tensor_prefix \"vision_\"");
}

}  // namespace

namespace {

// The tower's time at K3's shape (D 1024, nh 12, Q 1536, I 4096, 27 blocks,
// TH 7168, Q8G) on 1,024 patches, beside its FLOP count and the trunk
// matmul kernel's own rate on a tower-sized product. Not part of the suite
// (it writes a ~470 MB container): WASTE_VISION_BENCH=1 runs it; threads
// from WASTE_VISION_BENCH_THREADS (default 2).
TEST(VisionBench, K3ShapeOn1024Patches) {
    if (!std::getenv("WASTE_VISION_BENCH")) GTEST_SKIP() << "set WASTE_VISION_BENCH=1 to run";
    const char* threads_text = std::getenv("WASTE_VISION_BENCH_THREADS");
    const unsigned threads = threads_text ? static_cast<unsigned>(std::atoi(threads_text)) : 2u;
    waste_test::TempDir dir;
    const std::string path = (dir / "k3-tower.waste").string();
    waste::synth::SynthOptions options;
    options.preset = "tiny-k3";
    options.overrides = {{"hidden_size", 7168},
                         {"num_hidden_layers", 1},
                         {"vision",
                          {{"vt_hidden_size", 1024}, {"vt_num_attention_heads", 12}, {"qkv_hidden_size", 1536},
                           {"vt_intermediate_size", 4096}, {"vt_num_hidden_layers", 27}, {"init_pos_emb_height", 64},
                           {"init_pos_emb_width", 64}, {"max_patches", 1024}}}};
    waste::synth::write_synthetic_container(path, options);
    const auto container = Container::open(path, {.want_direct_io = false});
    const VisionConfig vision = *waste::format::read_vision_config(path, container->config());
    const auto tower = VisionTower::load(*container, vision);
    waste::platform::ThreadPool pool(threads);

    // FLOPs (2 per multiply-add) at L = 1024 patches, N = 256 tokens.
    const double L = 1024, N = 256, D = 1024, Q = 1536, I = 4096, TH = 7168, blocks = 27;
    const double projections = 2 * L * 588 * D + blocks * 2 * L * (D * 3 * Q + Q * D + 2 * D * I) +
                               2 * N * (4 * D * 4 * D + 4 * D * TH);
    const double attention = blocks * 2 * (2 * L * L * Q);
    std::vector<float> in(static_cast<size_t>(L) * waste::format::vision_patch_values);
    std::mt19937 random(1);
    std::uniform_real_distribution<float> value(-1.0f, 1.0f);
    for (float& v : in) v = value(random);

    // The kernel alone: fc0 of block 0 ([4096, 1024] Q8G) over 1024 patches.
    const waste::format::TensorSet fc0_set = container->load_tensors({"vision_tower.encoder.blocks.0.mlp.fc0.weight"});
    const waste::format::LoadedTensor& fc0 = fc0_set.tensors.begin()->second;
    std::vector<float> x(static_cast<size_t>(L * D), 0.5f), y(static_cast<size_t>(L * I));
    const auto k0 = std::chrono::steady_clock::now();
    waste::kernels::matmul(pool, fc0, x.data(), static_cast<size_t>(D), static_cast<size_t>(L), y.data(), static_cast<size_t>(I));
    const double kernel_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - k0).count();

    const auto t0 = std::chrono::steady_clock::now();
    const std::vector<float> e = tower->embed(pool, in, 32, 32);
    const double tower_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_EQ(e.size(), static_cast<size_t>(N * TH));
    std::printf("K3 tower, 1024 patches (32x32), %u threads: %.2f s; %.1f GFLOP (%.1f projections + %.1f attention) = "
                "%.1f GFLOP/s; trunk matmul alone ([4096,1024] Q8G x 1024 tokens): %.1f GFLOP/s; tower weights %.0f MB\n",
                threads, tower_s, (projections + attention) / 1e9, projections / 1e9, attention / 1e9,
                (projections + attention) / 1e9 / tower_s, 2 * L * D * I / 1e9 / kernel_s, tower->weight_bytes() / 1e6);
}

}  // namespace
