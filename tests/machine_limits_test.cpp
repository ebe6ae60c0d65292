// machine_limits_test.cpp — the figures `waste bench` sets a token against
// (docs/CLI.md, "waste bench"): the measured f32 multiply-add peak, and what
// one decode token touches and multiplies, recomputed here from the
// container's manifest.json by its own reading of the format (FORMAT.md), not
// from the engine's code. Not a speed test: nothing asserts how fast.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "test_support.h"
#include "waste/waste.h"

namespace {

using json = nlohmann::json;

TEST(MachineLimits, ComputePeakIsMeasuredAndItsArgumentsChecked) {
    double peak = -1;
    waste_error error{};
    ASSERT_EQ(waste_measure_compute_peak(1, &peak, &error), WASTE_OK) << error.message;
    // one FMA lane at 1 GHz is 1e9; no CPU this runs on is 100× beyond
    // 64 lanes × 2 ports × 6 GHz a core
    EXPECT_TRUE(std::isfinite(peak));
    EXPECT_GT(peak, 1e8);
    EXPECT_LT(peak, 1e14);
    EXPECT_EQ(waste_measure_compute_peak(1, nullptr, &error), WASTE_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(error.message).find("out_multiply_adds_per_second"), std::string::npos) << error.message;
}

// Bytes and multiply-adds of a token on `preset`, against the manifest: every
// text trunk tensor's payload and scales once (the embedding only one row:
// its table was counted whole until 2026-12-03, 34 MB too many on mid), the
// trunk's weights as multiply-adds, and each table entry a vec_dim-long dot
// product (gate and up tables once per layer, a down table per routed expert).
void check_traffic(const char* preset) {
    SCOPED_TRACE(preset);
    waste_test::TempDir dir;
    const std::string path = (dir.path() / "model").string();
    waste_error error{};
    ASSERT_EQ(waste_synth(path.c_str(), preset, 1, nullptr, nullptr, nullptr, &error), WASTE_OK) << error.message;
    std::ifstream file(path + "/manifest.json");
    const json manifest = json::parse(file);
    const json& config = manifest["config"];
    const std::string prefix = manifest.value("tensor_prefix", "");
    uint64_t bytes = 0, macs = 0;
    for (const json& t : manifest["trunk"]) {
        const std::string name = t["name"];
        if (name.rfind(prefix, 0) != 0) continue;  // outside the text model (a vision tower)
        uint64_t rows = 1;
        const json& shape = t["shape"];
        for (size_t i = 0; i + 1 < shape.size(); ++i) rows *= shape[i].get<uint64_t>();
        const uint64_t elements = rows * shape.back().get<uint64_t>();
        const uint64_t stored = t["bytes"].get<uint64_t>();  // payload and scales
        if (name == prefix + "model.embed_tokens.weight" && !config.value("tie_word_embeddings", false)) {
            bytes += stored / rows;
            continue;
        }
        bytes += stored;
        macs += elements;
    }
    waste_model* model = nullptr;
    waste_open_options options;
    waste_open_options_init(&options);
    options.flags = WASTE_OPEN_METADATA_ONLY;
    ASSERT_EQ(waste_model_open(path.c_str(), &options, &model, &error), WASTE_OK) << error.message;
    char* text = nullptr;
    ASSERT_EQ(waste_model_token_traffic_json(model, &text, &error), WASTE_OK) << error.message;
    const json traffic = json::parse(text);
    waste_string_free(text);
    waste_model_close(model);
    EXPECT_EQ(traffic["trunk_bytes"].get<uint64_t>(), bytes);
    EXPECT_EQ(traffic["trunk_multiply_adds"].get<uint64_t>(), macs);
    const json& q = manifest["expert_quant"];
    const uint64_t layers = manifest["layers"].size(), top_k = config["num_experts_per_token"].get<uint64_t>();
    const uint64_t inter = config["moe_intermediate_size"].get<uint64_t>();
    const uint64_t lat = config.value("routed_expert_hidden_size", 0ull) ? config["routed_expert_hidden_size"].get<uint64_t>()
                                                                 : config["hidden_size"].get<uint64_t>();
    const uint64_t entries = q["entries"].get<uint64_t>(), stages = q["stages"].get<uint64_t>();
    EXPECT_EQ(traffic["table_multiply_adds"].get<uint64_t>(), layers * stages * entries * (2 * lat + top_k * inter));
    EXPECT_EQ(traffic["total_bytes"].get<uint64_t>(), traffic["trunk_bytes"].get<uint64_t>() +
                                                          traffic["expert_bytes"].get<uint64_t>() +
                                                          traffic["lut_bytes"].get<uint64_t>());
}

TEST(MachineLimits, TokenTrafficMatchesTheManifest) {
    check_traffic("tiny");
    check_traffic("tiny-k3");
}

}  // namespace
