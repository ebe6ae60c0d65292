// lut_mode_test.cpp — the approximate int8 lookup-table mode
// (waste_open_options.lut_mode = WASTE_LUT_INT8, kernels/vq_lut.h) through
// the C API on the upstream fixture container (../shared/fixtures/upstream/
// tiny.waste: 4 layers, 8 experts top-2, VQ3R). Decode steps are what it
// changes, so the prompt is evaluated token by token (prefill chunk 1):
// * thread counts 1, 2 and 3 give bit-identical logits in int8 mode (each
//   thread quantises whole 32-position blocks; rows never split a sum);
// * int8 differs from exact (the mode is really used) by a bounded amount:
//   max |Δlogit| <= 2e-2 of the exact logits' spread (max - min) at every
//   step, decode and prefill. The trunk's Q8G/Q4G projections and the LM
//   head take int8 inputs in this mode (kernels/trunk_int8.h), and their
//   rounding dominates: measured 5.5e-3 over the decode steps, 2.5e-3 /
//   5.1e-3 in prefill chunks of 20 / 7 (before the trunk took int8 inputs,
//   the experts' int8 tables and rows alone gave 3.9e-6 and 6.6e-7 /
//   3.1e-6). Each kernel's own rounding bound is checked in
//   int8_matmul_test and kernels_test; the mode's cost in perplexity on a
//   trained model is in docs/QUALITY.md;
// * a chunked prompt (prefill) runs int8 rows (kernels/int8_matmul.h),
//   bit-identical for 1, 2 and 3 threads, and bit-identical whether the
//   engine holds every expert decoded, some or none (the budget decides
//   placement, never precision);
// * a saved state loads to the saving session's logits bits (the load
//   recomputes them through the same int8 LM head);
// * the plan counts the int8 tables, the decoded experts get what the
//   budget has left once every record is cached, and a lut_mode outside the
//   enum is refused naming it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_support.h"
#include "waste/waste.h"

namespace {

using nlohmann::json;

using Opened = waste_test::OpenedSession;

// int8 against exact logits, as a share of the exact logits' spread: the
// trunk's int8 inputs dominate (see the header); measured 6.0e-3.
constexpr double tolerance = 2e-2;

void open(unsigned threads, uint32_t lut_mode, Opened& out, uint64_t budget = 0) {
    waste_open_options options;
    waste_open_options_init(&options);
    options.threads = threads;
    options.budget_bytes = budget;
    options.context_length = 256;
    options.lut_mode = lut_mode;
    waste_error error{};
    const std::string path = waste_test::fixture("tiny.waste").string();
    ASSERT_EQ(waste_model_open(path.c_str(), &options, &out.model, &error), WASTE_OK) << error.message;
    ASSERT_EQ(waste_session_create(out.model, &out.session, &error), WASTE_OK) << error.message;
}

std::vector<int32_t> prompt() {
    const json cases = json::parse(waste_test::read_file(waste_test::fixture("tiny.eval.json")));
    return cases[1]["prompt"].get<std::vector<int32_t>>();  // 20 tokens
}

// The logits after each token of the prompt, evaluated in chunks of `chunk`.
std::vector<std::vector<float>> logits_per_step(Opened& opened, const std::vector<int32_t>& tokens, uint32_t chunk) {
    waste_error error{};
    EXPECT_EQ(waste_session_set_prefill_chunk(opened.session, chunk, &error), WASTE_OK) << error.message;
    std::vector<std::vector<float>> out;
    for (size_t i = 0; i < tokens.size(); i += chunk) {
        const size_t n = std::min<size_t>(chunk, tokens.size() - i);
        EXPECT_EQ(waste_session_eval(opened.session, tokens.data() + i, n, &error), WASTE_OK) << error.message;
        const float* logits = nullptr;
        size_t vocab = 0;
        EXPECT_EQ(waste_session_logits(opened.session, &logits, &vocab, &error), WASTE_OK) << error.message;
        out.emplace_back(logits, logits + vocab);
    }
    return out;
}

// decode steps (chunk 1: the int8 tables) and prefill chunks (7: the int8 rows)
TEST(LutInt8, ThreadCountsBitIdentical) {
    for (uint32_t chunk : {1u, 7u}) {
        std::vector<std::vector<std::vector<float>>> results;
        for (unsigned threads : {1u, 2u, 3u}) {
            Opened opened;
            open(threads, WASTE_LUT_INT8, opened);
            results.push_back(logits_per_step(opened, prompt(), chunk));
        }
        EXPECT_EQ(results[0], results[1]) << "chunk " << chunk;
        EXPECT_EQ(results[0], results[2]) << "chunk " << chunk;
    }
}

TEST(LutInt8, CloseToExactButNotEqual) {
    Opened exact, int8;
    open(2, WASTE_LUT_EXACT, exact);
    open(2, WASTE_LUT_INT8, int8);
    const auto want = logits_per_step(exact, prompt(), 1);
    const auto got = logits_per_step(int8, prompt(), 1);
    ASSERT_EQ(want.size(), got.size());
    double worst = 0;
    bool any_difference = false;
    for (size_t step = 0; step < want.size(); ++step) {
        const auto [lo, hi] = std::minmax_element(want[step].begin(), want[step].end());
        const double spread = *hi - *lo;
        double max_diff = 0;
        for (size_t i = 0; i < want[step].size(); ++i)
            max_diff = std::max(max_diff, static_cast<double>(std::fabs(got[step][i] - want[step][i])));
        any_difference = any_difference || max_diff > 0;
        worst = std::max(worst, max_diff / spread);
        EXPECT_LE(max_diff, tolerance * spread) << "step " << step;
    }
    EXPECT_TRUE(any_difference) << "int8 mode gave the exact logits: the mode is not used";
    std::printf("LUTINT8 tiny max|dlogit|/spread over 20 decode steps: %.3e\n", worst);
}

// A saved state's next-token logits are recomputed at load (final norm and
// LM head): in the int8 mode through the same int8 LM head, so the loaded
// session's logits are the saving session's bits.
TEST(LutInt8, SavedStateLoadsToTheSameLogits) {
    Opened saving, loading;
    open(2, WASTE_LUT_INT8, saving);
    const auto steps = logits_per_step(saving, prompt(), 20);
    waste_test::TempDir dir;
    const std::string path = (dir.path() / "state.bin").string();
    waste_error error{};
    ASSERT_EQ(waste_state_save(saving.session, path.c_str(), &error), WASTE_OK) << error.message;
    ASSERT_EQ(waste_session_create(saving.model, &loading.session, &error), WASTE_OK) << error.message;
    ASSERT_EQ(waste_state_load(loading.session, path.c_str(), &error), WASTE_OK) << error.message;
    const float* logits = nullptr;
    size_t vocab = 0;
    ASSERT_EQ(waste_session_logits(loading.session, &logits, &vocab, &error), WASTE_OK) << error.message;
    EXPECT_EQ(std::vector<float>(logits, logits + vocab), steps.back());
}

// The plan an open at this budget (0: the default) and the tests' context ran with.
json plan_of(waste_model* model, uint64_t budget = 0) {
    waste_error error{};
    char* text = nullptr;
    const waste_plan_options options{256, budget};
    EXPECT_EQ(waste_model_plan_json(model, &options, &text, &error), WASTE_OK) << error.message;
    const json plan = json::parse(text);
    waste_string_free(text);
    return plan;
}

TEST(LutInt8, PrefillCloseToExactButNotEqual) {
    for (uint32_t chunk : {20u, 7u}) {
        Opened exact, int8;
        open(2, WASTE_LUT_EXACT, exact);
        open(2, WASTE_LUT_INT8, int8);
        const auto want = logits_per_step(exact, prompt(), chunk);
        const auto got = logits_per_step(int8, prompt(), chunk);
        ASSERT_EQ(want.size(), got.size());
        double worst = 0;
        for (size_t step = 0; step < want.size(); ++step) {
            const auto [lo, hi] = std::minmax_element(want[step].begin(), want[step].end());
            double max_diff = 0;
            for (size_t i = 0; i < want[step].size(); ++i)
                max_diff = std::max(max_diff, static_cast<double>(std::fabs(got[step][i] - want[step][i])));
            worst = std::max(worst, max_diff / (*hi - *lo));
            EXPECT_LE(max_diff, tolerance * (*hi - *lo)) << "chunk " << chunk << " step " << step;
        }
        EXPECT_GT(worst, 0.0) << "int8 prefill gave the exact logits: the int8 rows are not used";
        std::printf("LUTINT8 tiny prefill in chunks of %u: max|dlogit|/spread %.3e\n", chunk, worst);
    }
}

TEST(LutInt8, DecodedExpertsPlacementBitIdentical) {
    // the budgets: every record cached and every expert decoded; every
    // record and a third of the decoded experts; every record and none
    Opened probe;
    open(2, WASTE_LUT_INT8, probe, 1ull << 34);
    const json full = plan_of(probe.model, 1ull << 34);
    const uint64_t all_decoded = full.at("all_decoded_experts_bytes").get<uint64_t>();
    ASSERT_GT(all_decoded, 0u);
    EXPECT_EQ(full.at("decoded_experts_bytes").get<uint64_t>(), all_decoded);
    const uint64_t records_only = full.at("floor_bytes").get<uint64_t>() - full.at("min_expert_cache").get<uint64_t>() +
                                  full.at("all_experts_bytes").get<uint64_t>();
    std::vector<std::vector<std::vector<float>>> results;
    const uint64_t budgets[] = {1ull << 34, records_only + all_decoded / 3, records_only};
    for (size_t b = 0; b < 3; ++b) {
        Opened opened;
        open(2, WASTE_LUT_INT8, opened, budgets[b]);
        const json plan = plan_of(opened.model, budgets[b]);
        EXPECT_EQ(plan.at("expert_cache_bytes").get<uint64_t>(), full.at("all_experts_bytes").get<uint64_t>());
        const uint64_t held = plan.at("decoded_experts_bytes").get<uint64_t>();
        switch (b) {
            case 0: EXPECT_EQ(held, all_decoded); break;
            case 1: EXPECT_TRUE(held > 0 && held < all_decoded) << held; break;
            default: EXPECT_EQ(held, 0u);
        }
        results.push_back(logits_per_step(opened, prompt(), 20));
        // what the engine holds decoded after the prompt: within its plan,
        // and something whenever the plan gives room
        waste_error error{};
        char* text = nullptr;
        ASSERT_EQ(waste_model_info_json(opened.model, &text, &error), WASTE_OK) << error.message;
        const json store = json::parse(text).at("decoded_experts");
        waste_string_free(text);
        EXPECT_LE(store.at("held_bytes").get<uint64_t>(), held);
        EXPECT_EQ(store.at("capacity_bytes").get<uint64_t>(), held);
        if (b < 2) {
            EXPECT_GT(store.at("held").get<uint64_t>(), 0u);
        } else {
            EXPECT_EQ(store.at("held").get<uint64_t>(), 0u);
        }
        // a second prompt: the store is warm now (or still empty)
        results.push_back(logits_per_step(opened, prompt(), 20));
    }
    for (size_t i = 1; i < results.size(); ++i) EXPECT_EQ(results[i % 2], results[i]) << "budget " << i / 2;
}

TEST(LutInt8, PlanAndBadMode) {
    Opened exact, int8;
    open(1, WASTE_LUT_EXACT, exact);
    open(1, WASTE_LUT_INT8, int8);
    waste_error error{};
    EXPECT_GT(plan_of(int8.model).at("scratch_bytes").get<uint64_t>(), plan_of(exact.model).at("scratch_bytes").get<uint64_t>());
    EXPECT_EQ(plan_of(exact.model).at("decoded_experts_bytes").get<uint64_t>(), 0u);

    waste_open_options options;
    waste_open_options_init(&options);
    options.lut_mode = 2;
    waste_model* model = nullptr;
    const std::string path = waste_test::fixture("tiny.waste").string();
    EXPECT_EQ(waste_model_open(path.c_str(), &options, &model, &error), WASTE_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(model, nullptr);
    EXPECT_NE(std::string(error.message).find("lut_mode 2"), std::string::npos) << error.message;
}

}  // namespace
