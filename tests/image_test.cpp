// image_test.cpp — src/image: decoding every format and colour type, hostile
// files, the EXIF orientation, the patch grid, and the resize + normalise +
// layout, each against an independent side (tests/image_reference.py, run
// with Debian's /usr/bin/python3, Pillow and numpy).
//
// Pixel tolerances are stated per file in the manifest the script writes:
// 0 where the script knows the pixels (hand-written PNG and BMP, GIF, lossless
// WebP, lossy WebP through the same libwebp), 1 level for JPEG (Pillow's
// decode through the same libjpeg-turbo; 1 allows an IDCT rounding build
// difference). The patch tensor is compared bit for bit with §2.3's float32
// arithmetic emulated in numpy, and with a float64 reference within the
// float32 rounding bound derived at `f32_rounding_bound`; end to end, our
// decode + patches against Pillow's decode + numpy's patches (vision.md §6.5).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <random>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "image/exif_orientation.h"
#include "image/image.h"
#include "image/patches.h"
#include "platform/error.h"
#include "test_support.h"
#include "waste/waste.h"

namespace {

using namespace waste_test;
namespace image = waste::image;
using nlohmann::json;

const char* python = "/usr/bin/python3";

std::string reference_script() { return (source_dir() / "tests" / "image_reference.py").string(); }

// Runs `image_reference.py MODE ARGS...`; its exit status, its output into *output.
int run_reference(const std::string& mode, const std::vector<std::filesystem::path>& args, std::string* output) {
    std::string command = fmt::format("{} '{}' {}", python, reference_script(), mode);
    for (const auto& arg : args) command += fmt::format(" '{}'", arg.string());
    return run_command(command, output);
}

bool reference_installed() {
    static const bool installed = [] {   // asked once: each ask starts Python (~0.1 s)
        std::string output;
        return run_command(fmt::format("{} -c 'import PIL, numpy'", python), &output) == 0;
    }();
    return installed;
}

std::string status_word(waste_status status) {
    switch (status) {
        case WASTE_ERR_FORMAT: return "format";
        case WASTE_ERR_UNSUPPORTED: return "unsupported";
        case WASTE_ERR_IO: return "io";
        case WASTE_OK: return "ok";
        default: return fmt::format("status {}", static_cast<int>(status));
    }
}

// The files image_reference.py makes, once for the suite (~0.3 s).
class ImageFiles : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        if (!reference_installed()) return;
        dir_ = new TempDir;
        std::string output;
        if (run_reference("make", {dir_->path()}, &output) != 0) {
            made_error_ = "image_reference.py make failed: " + output;
            return;
        }
        manifest_ = new json(json::parse(read_file(dir_->path() / "manifest.json")));
    }
    static void TearDownTestSuite() {
        delete manifest_;
        delete dir_;
        manifest_ = nullptr;
        dir_ = nullptr;
    }
    void SetUp() override {
        WASTE_REQUIRE_ORACLE(reference_installed(), "needs /usr/bin/python3 with Pillow and numpy (python3-pil, python3-numpy)");
        ASSERT_TRUE(made_error_.empty()) << made_error_;
        ASSERT_NE(manifest_, nullptr);
    }
    static std::string path(const std::string& file) { return (dir_->path() / file).string(); }
    static const json& manifest() { return *manifest_; }

private:
    static inline TempDir* dir_ = nullptr;
    static inline json* manifest_ = nullptr;
    static inline std::string made_error_;
};

TEST_F(ImageFiles, DecodesEveryFormatAndColourTypeToTheExpectedPixels) {
    int checked = 0;
    for (const json& entry : manifest()) {
        if (entry["expect"] != "pixels") continue;
        const std::string file = entry["file"];
        SCOPED_TRACE(file + ": " + entry["why"].get<std::string>());
        const uint32_t width = entry["width"], height = entry["height"];
        const int tolerance = entry["tolerance"];
        const std::string expected = read_file(path(file + ".rgb"));
        image::RgbImage decoded;
        ASSERT_EQ(status_of([&] { decoded = image::decode_image_file(path(file)); }), WASTE_OK);
        ASSERT_EQ(decoded.width, width);
        ASSERT_EQ(decoded.height, height);
        ASSERT_EQ(decoded.rgb.size(), expected.size());
        int worst = 0;
        size_t worst_at = 0;
        for (size_t i = 0; i < expected.size(); ++i) {
            const int difference = std::abs(int{decoded.rgb[i]} - int{static_cast<uint8_t>(expected[i])});
            if (difference > worst) worst = difference, worst_at = i;
        }
        EXPECT_LE(worst, tolerance) << "at pixel " << worst_at / 3 << " channel " << worst_at % 3;
        // The header probe agrees with the decode, through the C API too.
        const image::ImageSize probed = image::image_dimensions_file(path(file));
        EXPECT_EQ(probed.width, width);
        EXPECT_EQ(probed.height, height);
        uint32_t api_width = 0, api_height = 0;
        waste_error error{};
        EXPECT_EQ(waste_image_dimensions(path(file).c_str(), &api_width, &api_height, &error), WASTE_OK) << error.message;
        EXPECT_EQ(api_width, width);
        EXPECT_EQ(api_height, height);
        ++checked;
    }
    EXPECT_GE(checked, 49);   // every pixels entry image_reference.py writes
}

TEST_F(ImageFiles, RefusesHostileFilesByNameWithoutAllocatingTheDeclaredSize) {
    int checked = 0;
    for (const json& entry : manifest()) {
        if (entry["expect"] != "refuse") continue;
        const std::string file = entry["file"];
        SCOPED_TRACE(file);
        std::string message;
        const waste_status status = status_of([&] { image::decode_image_file(path(file)); }, &message);
        EXPECT_EQ(status_word(status), entry["status"].get<std::string>()) << message;
        EXPECT_NE(message.find(file), std::string::npos) << message;
        EXPECT_NE(message.find(entry["contains"].get<std::string>()), std::string::npos) << message;
        const waste_status probe = status_of([&] { image::image_dimensions_file(path(file)); }, &message);
        if (entry["probe"] == "ok") EXPECT_EQ(probe, WASTE_OK) << message;
        else EXPECT_EQ(status_word(probe), entry["status"].get<std::string>()) << message;
        ++checked;
    }
    EXPECT_GE(checked, 15);   // every refusal entry image_reference.py writes
}

TEST_F(ImageFiles, ProbeAcceptsExactlyThePixelBound) {
    // 8192 x 8192 = 64·2^20: the header alone is read (decoding would need 192 MiB).
    const image::ImageSize size = image::image_dimensions_file(path("at_bound.png"));
    EXPECT_EQ(size.width, 8192u);
    EXPECT_EQ(size.height, 8192u);
}

// Every prefix and a spread of single-byte corruptions of one file per
// format: decoded or refused with FORMAT/UNSUPPORTED, never another status,
// a crash or a sanitizer report; and a file cut in half is always refused.
TEST_F(ImageFiles, TruncatedAndCorruptFilesAreRefusedOrDecodedNeverCrash) {
    std::mt19937 random(7);
    for (const char* file : {"rgb8_adam7.png", "palette_trns.png", "progressive.jpg", "exif6.jpg", "animated.gif",
                             "lossless.webp", "lossy.webp", "rgb24.bmp", "palette8.bmp"}) {
        SCOPED_TRACE(file);
        const std::string bytes = read_file(path(file));
        const size_t step = std::max<size_t>(1, bytes.size() / 97);
        for (size_t length = 0; length < bytes.size(); length += step) {
            std::string message;
            const waste_status status =
                status_of([&] { image::decode_image(std::string_view(bytes).substr(0, length), file); }, &message);
            EXPECT_TRUE(status == WASTE_OK || status == WASTE_ERR_FORMAT || status == WASTE_ERR_UNSUPPORTED)
                << length << ": " << message;
            if (length > 0 && length <= bytes.size() / 2) {
                EXPECT_NE(status, WASTE_OK) << "cut at " << length;
            }
            if (status != WASTE_OK) {
                EXPECT_NE(message.find(file), std::string::npos) << message;
            }
        }
        for (int flip = 0; flip < 200; ++flip) {
            std::string corrupt = bytes;
            corrupt[random() % corrupt.size()] ^= static_cast<char>(1 + random() % 255);
            std::string message;
            const waste_status status = status_of([&] { image::decode_image(corrupt, file); }, &message);
            EXPECT_TRUE(status == WASTE_OK || status == WASTE_ERR_FORMAT || status == WASTE_ERR_UNSUPPORTED) << message;
        }
    }
}

TEST(ImageApi, DimensionsNamesTheFileAndRejectsMissingArguments) {
    uint32_t width = 0, height = 0;
    waste_error error{};
    EXPECT_EQ(waste_image_dimensions("/nonexistent/photo.png", &width, &height, &error), WASTE_ERR_IO);
    EXPECT_NE(std::string(error.message).find("/nonexistent/photo.png"), std::string::npos) << error.message;
    EXPECT_EQ(waste_image_dimensions(nullptr, &width, &height, &error), WASTE_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(waste_image_dimensions("x.png", nullptr, &height, &error), WASTE_ERR_INVALID_ARGUMENT);
}

std::string exif_payload(const std::string& tiff) { return std::string("Exif\0\0", 6) + tiff; }

TEST(ExifOrientation, ReadsTheTagAndFallsBackToAsStoredOnAnyMalformation) {
    // II, IFD0 at 8, one entry: tag 0x0112, SHORT, count 1, value 6.
    const std::string good("II*\0\x08\0\0\0\x01\0\x12\x01\x03\0\x01\0\0\0\x06\0\0\0", 22);
    EXPECT_EQ(image::exif_orientation(exif_payload(good)), 6);
    EXPECT_EQ(image::exif_orientation(good), 1) << "no Exif prefix";
    // The value's two bytes end at offset 20; a payload cut before them is as stored.
    for (size_t cut = 0; cut < 20; ++cut) EXPECT_EQ(image::exif_orientation(exif_payload(good.substr(0, cut))), 1) << cut;
    std::string bad = good;
    bad[4] = '\xff';   // IFD0 offset far outside the segment
    EXPECT_EQ(image::exif_orientation(exif_payload(bad)), 1);
    bad = good;
    bad[8] = '\xff', bad[9] = '\xff';   // 65535 entries: runs off the end, bounded
    EXPECT_EQ(image::exif_orientation(exif_payload(bad)), 6) << "the tag is the first entry";
    bad = good;
    bad[18] = 9;   // orientation 9 is not a value
    EXPECT_EQ(image::exif_orientation(exif_payload(bad)), 1);
    bad = good;
    bad[12] = 4;   // LONG, not SHORT
    EXPECT_EQ(image::exif_orientation(exif_payload(bad)), 1);
    bad = good;
    bad[0] = 'X';
    EXPECT_EQ(image::exif_orientation(exif_payload(bad)), 1);
}

// vision.md §2.2's worked examples and edge cases, then random sizes against
// the script's float64 transcription (exact: both compute in float64).
TEST(PatchGrid, FollowsUpstreamsRule) {
    struct Case {
        uint32_t sw, sh, budget, gw, gh;
    };
    // vision.md's "896×896 → 64×64 patches → 1024 → 256 tokens": 64×64 is the
    // unscaled grid (896/14); its rule gives s = 0.5, so 32×32 = 1024 patches,
    // 256 tokens after the 2×2 merge, which is what the example's counts say.
    for (const Case& c : {Case{896, 896, 1024, 32, 32}, Case{354, 354, 1024, 24, 24}, Case{56, 28, 1024, 4, 2},
                          Case{3, 5, 1024, 2, 2}, Case{1, 1, 1024, 2, 2}, Case{100000, 1, 1024, 512, 2},
                          Case{1, 100000, 1024, 2, 512}, Case{8192, 8192, 1024, 32, 32}, Case{896, 896, 1, 2, 2},
                          Case{896, 896, 3, 2, 2}, Case{896, 896, 8, 2, 2}, Case{28, 28, 1024, 2, 2}, Case{42, 42, 1024, 2, 2}}) {
        const image::PatchGrid g = image::patch_grid(c.sw, c.sh, c.budget);
        EXPECT_EQ(g.width, c.gw) << c.sw << "x" << c.sh << " at " << c.budget;
        EXPECT_EQ(g.height, c.gh) << c.sw << "x" << c.sh << " at " << c.budget;
    }
    EXPECT_EQ(status_of([] { image::patch_grid(10, 10, 0); }), WASTE_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(status_of([] { image::patch_grid(10, 10, image::max_patch_budget + 1); }), WASTE_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(status_of([] { image::patch_grid(0, 10, 1024); }), WASTE_ERR_INVALID_ARGUMENT);

    WASTE_REQUIRE_ORACLE(reference_installed(), "needs /usr/bin/python3 with numpy");
    TempDir dir;
    std::mt19937 random(11);
    std::string cases;
    std::vector<std::array<uint32_t, 3>> sizes;
    for (int i = 0; i < 400; ++i) {
        const uint32_t budget = std::array<uint32_t, 5>{1, 16, 256, 1024, 4096}[random() % 5];
        const uint32_t sw = 1 + random() % (i % 2 ? 5000 : 300), sh = 1 + random() % (i % 3 ? 5000 : 300);
        sizes.push_back({sw, sh, budget});
        cases += fmt::format("{} {} {}\n", sw, sh, budget);
    }
    write_file(dir / "grids.txt", cases);
    std::string output;
    ASSERT_EQ(run_reference("grids", {dir / "grids.txt", dir / "expected.txt"}, &output), 0) << output;
    std::ifstream expected(dir / "expected.txt");
    for (const auto& [sw, sh, budget] : sizes) {
        uint32_t gw = 0, gh = 0;
        expected >> gw >> gh;
        const image::PatchGrid g = image::patch_grid(sw, sh, budget);
        EXPECT_EQ(g.width, gw) << sw << "x" << sh << " at " << budget;
        EXPECT_EQ(g.height, gh) << sw << "x" << sh << " at " << budget;
    }
}

// How far float32 arithmetic as written in §2.3 can sit from float64: the
// sample position fx = (X+0.5)·rx − 0.5 carries relative errors from rx and
// the product (≤ 2^-23 of |(X+0.5)·rx| ≤ max(sw, W)) plus one rounding of the
// subtraction, so |Δfx| ≤ max(sw, W)·2^-22; a weight error moves v by at most
// 255·|Δ| (the largest step between neighbouring samples), in x and in y; the
// blend's own roundings are below 16 ulp of 255; the normalisation then
// divides by 255 and by std and adds a few ulp of the output.
double f32_rounding_bound(uint32_t sw, uint32_t sh, uint32_t W, uint32_t H, float min_std, double max_abs_out) {
    const double fx = std::max(sw, W) * std::ldexp(1.0, -22), fy = std::max(sh, H) * std::ldexp(1.0, -22);
    const double v = 255.0 * (fx + fy) + 16 * 255.0 * std::ldexp(1.0, -24);
    return v / 255.0 / min_std + 8 * std::ldexp(1.0, -24) * (1.0 + max_abs_out);
}

// One image for image_reference.py's `patches`: raw [sh][sw][3] u8 in `rgb`.
struct PatchCase {
    std::filesystem::path rgb;
    uint32_t sw, sh, budget;
    image::Normalisation normalisation;
};
struct ReferencePatches {
    int64_t gw = 0, gh = 0;
    std::vector<double> exact;   // [L][588] float64 transcription
    std::vector<float> single;   // [L][588] §2.3's float32 arithmetic, emulated in numpy
};

std::vector<ReferencePatches> reference_patches(const TempDir& dir, const std::vector<PatchCase>& cases) {
    std::string lines;
    for (const PatchCase& c : cases)
        lines += json{{"rgb", c.rgb.string()}, {"width", c.sw}, {"height", c.sh}, {"max_patches", c.budget},
                      {"mean", c.normalisation.mean}, {"std", c.normalisation.std}}.dump() + "\n";
    write_file(dir / "cases.jsonl", lines);
    std::string output;
    if (run_reference("patches", {dir / "cases.jsonl", dir / "reference.bin"}, &output) != 0) {
        ADD_FAILURE() << output;
        return {};
    }
    const std::string bytes = read_file(dir / "reference.bin");
    std::vector<ReferencePatches> out;
    size_t at = 0;
    for (size_t n = 0; n < cases.size(); ++n) {
        ReferencePatches r;
        if (at + 16 > bytes.size()) break;
        std::memcpy(&r.gw, bytes.data() + at, 8);
        std::memcpy(&r.gh, bytes.data() + at + 8, 8);
        at += 16;
        const size_t count = size_t(r.gw * r.gh) * image::patch_values;
        if (at + count * 12 > bytes.size()) break;
        r.exact.resize(count);
        r.single.resize(count);
        std::memcpy(r.exact.data(), bytes.data() + at, count * 8);
        std::memcpy(r.single.data(), bytes.data() + at + count * 8, count * 4);
        at += count * 12;
        out.push_back(std::move(r));
    }
    EXPECT_EQ(out.size(), cases.size());
    EXPECT_EQ(at, bytes.size());
    return out;
}

// Ours against the reference: the grid exactly; every value within the
// float64 bound plus `input_levels` of 8-bit input difference (a decoder's
// tolerance, scaled by 1/255/std); and, for identical input pixels, bit for
// bit against the float32 emulation.
void expect_matches(const image::PatchTensor& ours, const ReferencePatches& reference, const PatchCase& c, int input_levels) {
    SCOPED_TRACE(fmt::format("{}x{} at {}", c.sw, c.sh, c.budget));
    ASSERT_EQ(ours.grid.width, reference.gw);
    ASSERT_EQ(ours.grid.height, reference.gh);
    EXPECT_EQ(ours.source_width, c.sw);
    EXPECT_EQ(ours.source_height, c.sh);
    ASSERT_EQ(ours.pixels.size(), reference.exact.size());
    double worst = 0, max_abs = 0;
    size_t mismatches = 0;
    for (size_t k = 0; k < reference.exact.size(); ++k) {
        worst = std::max(worst, std::abs(double{ours.pixels[k]} - reference.exact[k]));
        max_abs = std::max(max_abs, std::abs(reference.exact[k]));
        mismatches += std::memcmp(&ours.pixels[k], &reference.single[k], 4) != 0;
    }
    if (input_levels == 0) {
        EXPECT_EQ(mismatches, 0u) << "not bit-identical to §2.3's float32 arithmetic";
    }
    const float min_std = *std::min_element(c.normalisation.std.begin(), c.normalisation.std.end());
    const double bound = f32_rounding_bound(c.sw, c.sh, 14 * ours.grid.width, 14 * ours.grid.height, min_std, max_abs) +
                         input_levels / 255.0 / min_std;
    EXPECT_LE(worst, bound) << "float64 reference";
}

// CLIP's constants differ per channel, so a channel mix-up or a constant
// baked in shows (vision.md §6.5); K3's own are 0.5/0.5.
const image::Normalisation clip{{0.481f, 0.458f, 0.408f}, {0.269f, 0.261f, 0.276f}};
const image::Normalisation k3{};

TEST(Patches, ResizeNormaliseAndLayoutMatchAnIndependentTranscription) {
    WASTE_REQUIRE_ORACLE(reference_installed(), "needs /usr/bin/python3 with numpy");
    TempDir dir;
    std::vector<PatchCase> cases = {
        {"", 37, 23, 64, clip},     // mixed: up in one axis, down in the other
        {"", 300, 200, 64, k3},     // shrinking with no antialias
        {"", 5, 3, 1024, clip},     // tiny, upscaled to the 2x2 minimum
        {"", 1, 1, 16, k3},         // one pixel
        {"", 1000, 1, 16, clip},    // one row: every y clamps
        {"", 29, 57, 1024, k3},     // near 1:1 sampling (s = 1)
        {"", 201, 97, 256, clip},
    };
    std::mt19937 random(5);
    std::vector<image::PatchTensor> ours;
    for (size_t n = 0; n < cases.size(); ++n) {
        PatchCase& c = cases[n];
        image::RgbImage source{c.sw, c.sh, std::vector<uint8_t>(size_t{c.sw} * c.sh * 3)};
        // Random pixels with some flat and some sharp areas: edges are where
        // weights matter most.
        for (size_t i = 0; i < source.rgb.size(); ++i) source.rgb[i] = (i / 3 / 5) % 3 ? random() % 256 : 255 * (i % 2);
        c.rgb = dir / fmt::format("case{}.rgb", n);
        write_file(c.rgb, std::string(reinterpret_cast<const char*>(source.rgb.data()), source.rgb.size()));
        ours.push_back(image::image_to_patches(source, c.budget, c.normalisation));
    }
    const std::vector<ReferencePatches> reference = reference_patches(dir, cases);
    ASSERT_EQ(reference.size(), cases.size());
    for (size_t n = 0; n < cases.size(); ++n) expect_matches(ours[n], reference[n], cases[n], 0);
}

// vision.md §6.5: the whole path on real files — our decode and patches
// against Pillow's decode and numpy's patches. The JPEGs' tolerance is their
// decode's 1 level (ImageFiles' manifest), carried through the resize.
TEST_F(ImageFiles, EndToEndFromFilesMatchesPillowAndNumpy) {
    TempDir dir;
    std::vector<PatchCase> cases;
    std::vector<image::PatchTensor> ours;
    std::vector<int> levels;
    for (const json& entry : manifest()) {
        const std::string file = entry["file"];
        if (file != "exif6.jpg" && file != "progressive.jpg" && file != "animated.gif" && file != "rgba16.png" &&
            file != "lossy.webp")
            continue;
        const image::RgbImage decoded = image::decode_image_file(path(file));
        cases.push_back({path(file + ".rgb"), decoded.width, decoded.height, 16, cases.size() % 2 ? k3 : clip});
        ours.push_back(image::image_to_patches(decoded, 16, cases.back().normalisation));
        levels.push_back(entry["tolerance"]);
    }
    ASSERT_EQ(cases.size(), 5u);
    const std::vector<ReferencePatches> reference = reference_patches(dir, cases);
    ASSERT_EQ(reference.size(), cases.size());
    for (size_t n = 0; n < cases.size(); ++n) expect_matches(ours[n], reference[n], cases[n], levels[n]);
}

TEST(Patches, RefusesUnusableNormalisation) {
    image::RgbImage source{2, 2, std::vector<uint8_t>(12, 100)};
    image::Normalisation zero_std;
    zero_std.std[1] = 0.0f;
    std::string message;
    EXPECT_EQ(status_of([&] { image::image_to_patches(source, 16, zero_std); }, &message), WASTE_ERR_INVALID_ARGUMENT);
    EXPECT_NE(message.find("channel 1"), std::string::npos) << message;
    image::Normalisation nan_mean;
    nan_mean.mean[2] = std::nanf("");
    EXPECT_EQ(status_of([&] { image::image_to_patches(source, 16, nan_mean); }), WASTE_ERR_INVALID_ARGUMENT);
    // A flat image normalises to one value everywhere: (100/255 − 0.5)/0.5.
    const image::PatchTensor t = image::image_to_patches(source, 16, image::Normalisation{});
    ASSERT_EQ(t.pixels.size(), 4u * image::patch_values);
    for (float v : t.pixels) EXPECT_EQ(v, (100.0f / 255.0f - 0.5f) / 0.5f);
}

}  // namespace
