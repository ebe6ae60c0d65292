// fixture_logits_test.cpp — the engine reproduces the upstream engine's
// answers on its three fixture containers (../shared/fixtures/upstream):
// last-position logits within max|diff| <= 2e-3 (the fixtures' README: the
// upstream prefill is chunked and not bit-identical to its own token path),
// the same argmax, and the same 8-token greedy continuation. Also: thread
// counts 1, 2 and 3 give bit-identical logits (rows and experts are split
// over threads, never a reduction).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_support.h"
#include "waste/waste.h"

namespace {

using nlohmann::json;

using Opened = waste_test::OpenedSession;

void open(const std::string& path, unsigned threads, Opened& out) {
    waste_open_options options;
    waste_open_options_init(&options);
    options.threads = threads;
    options.context_length = 256;
    waste_error error{};
    ASSERT_EQ(waste_model_open(path.c_str(), &options, &out.model, &error), WASTE_OK) << error.message;
    ASSERT_EQ(waste_session_create(out.model, &out.session, &error), WASTE_OK) << error.message;
}

std::vector<float> logits_for(Opened& opened, const std::vector<int32_t>& prompt) {
    waste_error error{};
    EXPECT_EQ(waste_session_reset(opened.session, &error), WASTE_OK);
    EXPECT_EQ(waste_session_eval(opened.session, prompt.data(), prompt.size(), &error), WASTE_OK) << error.message;
    const float* logits = nullptr;
    size_t vocab = 0;
    EXPECT_EQ(waste_session_logits(opened.session, &logits, &vocab, &error), WASTE_OK) << error.message;
    return std::vector<float>(logits, logits + vocab);
}

class FixtureLogits : public ::testing::TestWithParam<std::string> {};

TEST_P(FixtureLogits, MatchUpstreamEngine) {
    const std::string name = GetParam();
    const json cases = json::parse(waste_test::read_file(waste_test::fixture(name + ".eval.json")));
    Opened opened;
    open(waste_test::fixture(name + ".waste").string(), 2, opened);
    for (const json& c : cases) {
        const std::vector<int32_t> prompt = c["prompt"].get<std::vector<int32_t>>();
        const std::vector<float> expected = c["logits"].get<std::vector<float>>();
        const std::vector<float> got = logits_for(opened, prompt);
        ASSERT_EQ(got.size(), expected.size());
        double max_diff = 0;
        size_t got_arg = 0, want_arg = 0;
        for (size_t i = 0; i < got.size(); ++i) {
            max_diff = std::max(max_diff, std::fabs(static_cast<double>(got[i]) - expected[i]));
            if (got[i] > got[got_arg]) got_arg = i;
            if (expected[i] > expected[want_arg]) want_arg = i;
        }
        EXPECT_LE(max_diff, 2e-3) << name << " prompt of " << prompt.size();
        EXPECT_EQ(got_arg, want_arg) << name << " prompt of " << prompt.size();
        std::vector<int32_t> greedy(8);
        size_t count = 0;
        waste_error error{};
        ASSERT_EQ(waste_session_generate_greedy(opened.session, 8, greedy.data(), &count, nullptr, nullptr, &error), WASTE_OK)
            << error.message;
        greedy.resize(count);
        EXPECT_EQ(greedy, c["greedy"].get<std::vector<int32_t>>()) << name << " prompt of " << prompt.size();
        RecordProperty(name + "_" + std::to_string(prompt.size()) + "_max_diff", std::to_string(max_diff));
    }
}

INSTANTIATE_TEST_SUITE_P(Upstream, FixtureLogits, ::testing::Values("tiny", "tiny-tok", "tiny-prefix"));

TEST(ThreadCounts, BitIdenticalLogits) {
    const json cases = json::parse(waste_test::read_file(waste_test::fixture("tiny.eval.json")));
    const std::vector<int32_t> prompt = cases[2]["prompt"].get<std::vector<int32_t>>();
    std::vector<std::vector<float>> results;
    for (unsigned threads : {1u, 2u, 3u}) {
        Opened opened;
        open(waste_test::fixture("tiny.waste").string(), threads, opened);
        results.push_back(logits_for(opened, prompt));
    }
    EXPECT_EQ(results[0], results[1]);
    EXPECT_EQ(results[0], results[2]);
}

}  // namespace
