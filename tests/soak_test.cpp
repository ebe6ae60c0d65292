// soak_test.cpp — a long run at the minimum budget (the plan's floor): 200
// cycles, each a reset, ten streamed decode tokens, a save of the session, a
// reset and a load, on a container whose routing turns the small cache over.
// Under the asan preset LeakSanitizer checks at exit that nothing of the
// 2,200 tokens, 400 resets, 200 saves and 200 loads leaked; in every build
// the test checks that no call failed, that each loaded session continues
// exactly as the saved one would have (tolerance 0: the state file holds
// every bit of the state), and — outside the sanitizers, whose shadow memory
// grows with every address touched and whose quarantine (ASan) holds freed
// memory on purpose — that the resident set does not grow once the run has
// settled.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "platform/memory_info.h"
#include "test_support.h"
#include "waste/waste.h"

namespace {

using nlohmann::json;


constexpr int cycles = 200;
constexpr int tokens_per_cycle = 10;
constexpr uint32_t context = 16;

// 6 layers (5 MoE), 32 experts top-4: a token touches 20 records and the
// floor's minimum cache holds 8, so nearly every token reads from disk.
const char* churn_overrides = R"({"num_hidden_layers": 6, "num_experts": 32, "num_experts_per_token": 4})";

std::vector<float> logits_of(waste_session* session) {
    const float* logits = nullptr;
    size_t n = 0;
    waste_error error{};
    EXPECT_EQ(waste_session_logits(session, &logits, &n, &error), WASTE_OK) << error.message;
    return logits ? std::vector<float>(logits, logits + n) : std::vector<float>();
}

int32_t argmax(const std::vector<float>& logits) {
    return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

TEST(Soak, TwoThousandTokensAtTheFloorWithResetsSavesAndLoads) {
    waste_test::TempDir dir;
    const std::string path = (dir.path() / "model").string();
    const std::string state = (dir.path() / "session.state").string();
    waste_error error{};
    ASSERT_EQ(waste_synth(path.c_str(), "tiny", 5, churn_overrides, nullptr, nullptr, &error), WASTE_OK) << error.message;

    waste_open_options options;
    waste_open_options_init(&options);
    options.flags = WASTE_OPEN_METADATA_ONLY;
    waste_test::OpenedSession metadata;
    ASSERT_EQ(waste_model_open(path.c_str(), &options, &metadata.model, &error), WASTE_OK) << error.message;
    waste_plan_options plan_options{context, 0};
    char* text = nullptr;
    ASSERT_EQ(waste_model_plan_json(metadata.model, &plan_options, &text, &error), WASTE_OK) << error.message;
    const json plan = json::parse(text);
    waste_string_free(text);

    waste_open_options_init(&options);
    options.context_length = context;
    options.budget_bytes = plan["floor_bytes"].get<uint64_t>();
    options.threads = 2;
    options.flags = WASTE_OPEN_NO_HOTLIST;
    waste_test::OpenedSession opened;
    ASSERT_EQ(waste_model_open(path.c_str(), &options, &opened.model, &error), WASTE_OK) << error.message;
    ASSERT_EQ(waste_session_create(opened.model, &opened.session, &error), WASTE_OK) << error.message;
    waste_session* session = opened.session;

    uint64_t settled_rss = 0;
    for (int cycle = 0; cycle < cycles; ++cycle) {
        ASSERT_EQ(waste_session_reset(session, &error), WASTE_OK) << error.message;
        int32_t token = 1 + cycle % 200;  // a different start each cycle, so the routes differ
        for (int i = 0; i < tokens_per_cycle - 1; ++i) {
            ASSERT_EQ(waste_session_eval(session, &token, 1, &error), WASTE_OK) << "cycle " << cycle << ": " << error.message;
            token = argmax(logits_of(session));
        }
        ASSERT_EQ(waste_state_save(session, state.c_str(), &error), WASTE_OK) << "cycle " << cycle << ": " << error.message;
        ASSERT_EQ(waste_session_eval(session, &token, 1, &error), WASTE_OK) << error.message;
        const std::vector<float> expected = logits_of(session);
        ASSERT_EQ(waste_session_reset(session, &error), WASTE_OK) << error.message;
        ASSERT_EQ(waste_session_position(session), 0u);
        ASSERT_EQ(waste_state_load(session, state.c_str(), &error), WASTE_OK) << "cycle " << cycle << ": " << error.message;
        ASSERT_EQ(waste_session_position(session), static_cast<uint32_t>(tokens_per_cycle - 1));
        ASSERT_EQ(waste_session_eval(session, &token, 1, &error), WASTE_OK) << error.message;
        const std::vector<float> resumed = logits_of(session);
        ASSERT_EQ(resumed.size(), expected.size());
        ASSERT_EQ(0, std::memcmp(resumed.data(), expected.data(), expected.size() * sizeof(float)))
            << "cycle " << cycle << ": the loaded session does not continue as the saved one";
        if (cycle == 49) settled_rss = waste::platform::current_resident_bytes();
    }
    waste_session_stats stats{};
    ASSERT_EQ(waste_session_stats_get(session, &stats, &error), WASTE_OK) << error.message;
    EXPECT_EQ(stats.tokens, static_cast<uint64_t>(cycles * (tokens_per_cycle + 1)));
    EXPECT_GT(stats.expert_misses, static_cast<uint64_t>(cycles)) << "the cache must turn over for this to soak the reads";
#ifndef WASTE_UNDER_SANITIZER
    // One session state of this model is ~60 KB: a state (or a read's
    // buffer) leaked per cycle would add > 9 MB over the last 150 cycles (the first 50 let the
    // allocator's per-thread arenas settle: on a loaded machine the pool's
    // threads take turns differently and 20 cycles were not always enough);
    // 4 MiB leaves room for the allocator's own bookkeeping.
    const uint64_t final_rss = waste::platform::current_resident_bytes();
    EXPECT_LE(final_rss, settled_rss + (uint64_t{4} << 20)) << "resident set after cycle 50: " << settled_rss;
#endif
}

}  // namespace
