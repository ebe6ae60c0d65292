// batch_step_test.cpp — waste_session_eval_batch: several sessions' decode
// steps evaluated together (model::forward_batch), on every family's tiny
// preset (KDA + MLA, K3's AttnRes and latent MoE, DeepSeek's MLA, Qwen3's
// and GLM's GQA, gpt-oss's sliding layers and sinks), exact and int8.
//
// * Bits (tolerance 0): a session's logits after each batched step do not
//   depend on the other rows of the batch. Sessions 0 and 1 step every time,
//   with the same prompts and tokens, in batches of 2, 3 and 8 whose other
//   members join and leave from step to step; their logits are identical
//   across the three runs, at 1 and 2 threads, with every expert cached and
//   streamed at the plan's floor.
// * Against the last token evaluated alone (waste_session_eval: a decode
//   step): within 1e-5 of the logits' spread and the same argmax, in both
//   modes. A batch applies each row's experts through that row's lookup
//   tables exactly as a decode step does; only the trunk's products over
//   several rows round as a prefill chunk's do (measured 3e-8 to 4e-7).
// * A batch of one is waste_session_eval, bit for bit.
// * Refusals leave every session as it was: a NULL or repeated session, a
//   token outside the vocabulary, a full session, each named by its index.
// * Stats: each member counts one token, and the members' shares of the
//   expert lookups add up to what the step looked up.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_support.h"
#include "waste/waste.h"

namespace {

struct Synth {
    waste_test::TempDir dir;
    std::string path;
};

const std::string& synth(const std::string& preset) {
    static std::map<std::string, std::unique_ptr<Synth>> made;
    auto& slot = made[preset];
    if (!slot) {
        slot = std::make_unique<Synth>();
        slot->path = (slot->dir.path() / preset).string();
        waste_error error{};
        EXPECT_EQ(waste_synth(slot->path.c_str(), preset.c_str(), 5, nullptr, nullptr, nullptr, &error), WASTE_OK) << error.message;
    }
    return slot->path;
}

struct Model {
    waste_model* model = nullptr;
    std::vector<waste_session*> sessions;
    ~Model() {
        for (waste_session* s : sessions) waste_session_free(s);
        waste_model_close(model);
    }
};

constexpr uint64_t kFloor = ~0ull;  // a budget: the plan's floor (experts streamed)

waste_open_options options_for(bool int8, unsigned threads, size_t count) {
    waste_open_options options;
    waste_open_options_init(&options);
    options.threads = threads;
    options.context_length = 64;
    options.sessions = static_cast<uint32_t>(count);
    options.lut_mode = int8 ? WASTE_LUT_INT8 : WASTE_LUT_EXACT;
    return options;
}

uint64_t floor_of(const std::string& preset, bool int8, unsigned threads, size_t count) {
    waste_open_options options = options_for(int8, threads, count);
    options.flags = WASTE_OPEN_METADATA_ONLY;
    waste_model* model = nullptr;
    waste_error error{};
    EXPECT_EQ(waste_model_open(synth(preset).c_str(), &options, &model, &error), WASTE_OK) << error.message;
    waste_plan_options plan_options{64, 0};
    char* text = nullptr;
    EXPECT_EQ(waste_model_plan_json(model, &plan_options, &text, &error), WASTE_OK) << error.message;
    const uint64_t floor = nlohmann::json::parse(text)["floor_bytes"].get<uint64_t>();
    waste_string_free(text);
    waste_model_close(model);
    return floor;
}

// A model with `count` sessions; budget 0: the recommended (every expert
// of a tiny preset cached); kFloor: the plan's floor (streamed).
void open(Model& out, const std::string& preset, bool int8, unsigned threads, size_t count, uint64_t budget = 0) {
    waste_open_options options = options_for(int8, threads, count);
    options.budget_bytes = budget == kFloor ? floor_of(preset, int8, threads, count) : budget;
    waste_error error{};
    ASSERT_EQ(waste_model_open(synth(preset).c_str(), &options, &out.model, &error), WASTE_OK) << error.message;
    for (size_t i = 0; i < count; ++i) {
        waste_session* s = nullptr;
        ASSERT_EQ(waste_session_create(out.model, &s, &error), WASTE_OK) << error.message;
        out.sessions.push_back(s);
    }
}

int32_t argmax(const std::vector<float>& v) { return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin()); }

std::vector<int32_t> prompt(size_t count, size_t seed, int32_t vocab) {
    std::vector<int32_t> out(count);
    uint32_t x = 2654435761u * static_cast<uint32_t>(seed + 1);
    for (int32_t& id : out) {
        x = x * 1664525u + 1013904223u;
        id = static_cast<int32_t>((x >> 8) % static_cast<uint32_t>(vocab));
    }
    return out;
}

int32_t vocab_of(waste_model* model) {
    char* text = nullptr;
    waste_error error{};
    EXPECT_EQ(waste_model_info_json(model, &text, &error), WASTE_OK) << error.message;
    const int32_t vocab = nlohmann::json::parse(text)["vocab"].get<int32_t>();
    waste_string_free(text);
    return vocab;
}

// Who steps at step j: sessions 0 and 1 always; each other one sits out
// one step in three (in turn), so members join and leave.
bool steps(size_t session, size_t step) { return session < 2 || (session + step) % 3 != 0; }

constexpr size_t kSteps = 6;
const std::vector<std::string> kPresets = {"tiny",     "tiny-k3",      "tiny-deepseek", "tiny-qwen3",
                                           "tiny-glm", "tiny-gpt-oss", "tiny-minimax", "tiny-mistral4"};

// Every step's logits per session ([step][session], empty where it sat
// out) and each session's sequence: its prompt (3 + 4 i tokens) and the
// tokens it was stepped (fixed per session and step, not sampled).
struct Batched {
    std::vector<std::vector<std::vector<float>>> logits;
    std::vector<std::vector<int32_t>> sequences;
    std::vector<size_t> prompt_lengths;
};

Batched run_batched(const std::string& preset, bool int8, unsigned threads, size_t batch, uint64_t budget) {
    Batched run;
    Model m;
    open(m, preset, int8, threads, batch, budget);
    if (!m.model) return run;
    const int32_t vocab = vocab_of(m.model);
    waste_error error{};
    for (size_t i = 0; i < batch; ++i) {
        run.sequences.push_back(prompt(3 + 4 * i, i, vocab));  // prompts of different lengths
        run.prompt_lengths.push_back(run.sequences.back().size());
        EXPECT_EQ(waste_session_eval(m.sessions[i], run.sequences[i].data(), run.sequences[i].size(), &error), WASTE_OK)
            << error.message;
    }
    for (size_t step = 0; step < kSteps; ++step) {
        std::vector<waste_session*> members;
        std::vector<int32_t> tokens;
        std::vector<size_t> who;
        for (size_t i = 0; i < batch; ++i) {
            if (!steps(i, step)) continue;
            members.push_back(m.sessions[i]);
            tokens.push_back(prompt(kSteps, 100 + i, vocab)[step]);
            who.push_back(i);
        }
        EXPECT_EQ(waste_session_eval_batch(members.data(), tokens.data(), members.size(), &error), WASTE_OK) << error.message;
        run.logits.emplace_back(batch);
        for (size_t k = 0; k < who.size(); ++k) {
            run.sequences[who[k]].push_back(tokens[k]);
            run.logits.back()[who[k]] = waste_test::session_logits(m.sessions[who[k]]);
        }
    }
    return run;
}

// Sessions 0 and 1's logits at every step.
std::vector<std::vector<float>> first_two(const Batched& run) {
    std::vector<std::vector<float>> out;
    for (const auto& step : run.logits)
        for (size_t i = 0; i < 2; ++i) out.push_back(step.at(i));
    return out;
}

TEST(BatchStep, ARowsBitsDoNotDependOnTheOtherRows) {
    for (const std::string& preset : kPresets)
        for (bool int8 : {false, true}) {
            SCOPED_TRACE(preset + (int8 ? " int8" : " exact"));
            const Batched two = run_batched(preset, int8, 2, 2, 0);
            const Batched three = run_batched(preset, int8, 2, 3, 0);
            const Batched eight = run_batched(preset, int8, 2, 8, 0);
            ASSERT_EQ(two.logits.size(), kSteps);
            EXPECT_EQ(first_two(two), first_two(three));
            EXPECT_EQ(first_two(two), first_two(eight));
        }
}

TEST(BatchStep, ThreadsAndTheBudgetChangeNoBit) {
    for (const std::string& preset : {std::string("tiny"), std::string("tiny-qwen3")})
        for (bool int8 : {false, true}) {
            SCOPED_TRACE(preset + (int8 ? " int8" : " exact"));
            const Batched cached = run_batched(preset, int8, 2, 3, 0);
            const Batched one_thread = run_batched(preset, int8, 1, 3, 0);
            const Batched streamed = run_batched(preset, int8, 2, 3, kFloor);
            EXPECT_EQ(cached.logits, one_thread.logits);
            EXPECT_EQ(cached.logits, streamed.logits);
        }
}

// max |a - b| / spread(b)
double relative_distance(const std::vector<float>& a, const std::vector<float>& b) {
    const auto [lo, hi] = std::minmax_element(b.begin(), b.end());
    double diff = 0;
    for (size_t v = 0; v < b.size(); ++v) diff = std::max(diff, static_cast<double>(std::fabs(a[v] - b[v])));
    return diff / (*hi - *lo);
}

TEST(BatchStep, AgreesWithEachTokenEvaluatedAlone) {
    for (const std::string& preset : kPresets)
        for (bool int8 : {false, true}) {
            SCOPED_TRACE(preset + (int8 ? " int8" : " exact"));
            const size_t batch = 3;
            const Batched run = run_batched(preset, int8, 2, batch, 0);
            Model alone;
            open(alone, preset, int8, 2, 1);
            waste_session* s = alone.sessions[0];
            waste_error error{};
            double worst = 0;
            for (size_t i = 0; i < batch; ++i) {
                ASSERT_EQ(waste_session_reset(s, &error), WASTE_OK);
                ASSERT_EQ(waste_session_eval(s, run.sequences[i].data(), run.prompt_lengths[i], &error), WASTE_OK) << error.message;
                size_t at = run.prompt_lengths[i];
                for (size_t step = 0; step < kSteps; ++step) {
                    if (run.logits[step][i].empty()) continue;
                    ASSERT_EQ(waste_session_eval(s, &run.sequences[i][at++], 1, &error), WASTE_OK) << error.message;
                    const std::vector<float> want = waste_test::session_logits(s);
                    const std::vector<float>& got = run.logits[step][i];
                    const double distance = relative_distance(got, want);
                    worst = std::max(worst, distance);
                    EXPECT_LE(distance, 1e-5) << "session " << i << ", step " << step;
                    EXPECT_EQ(argmax(got), argmax(want)) << "session " << i << ", step " << step;
                }
            }
            std::printf("BATCH %s %s: max |dlogit| / spread against each token alone %.2e\n", preset.c_str(), int8 ? "int8" : "exact",
                        worst);
        }
}

TEST(BatchStep, ABatchOfOneIsTheDecodeStep) {
    for (bool int8 : {false, true}) {
        Model m;
        open(m, "tiny", int8, 2, 2);
        const std::vector<int32_t> p = prompt(9, 4, vocab_of(m.model));
        waste_error error{};
        for (waste_session* s : m.sessions) ASSERT_EQ(waste_session_eval(s, p.data(), p.size(), &error), WASTE_OK);
        for (int step = 0; step < 4; ++step) {
            const int32_t token = argmax(waste_test::session_logits(m.sessions[0]));
            ASSERT_EQ(waste_session_eval_batch(&m.sessions[0], &token, 1, &error), WASTE_OK) << error.message;
            ASSERT_EQ(waste_session_eval(m.sessions[1], &token, 1, &error), WASTE_OK) << error.message;
            EXPECT_EQ(waste_test::session_logits(m.sessions[0]), waste_test::session_logits(m.sessions[1])) << "step " << step;
        }
    }
}

TEST(BatchStep, RefusalsNameTheIndexAndChangeNothing) {
    Model m;
    open(m, "tiny", false, 2, 3);
    const std::vector<int32_t> p = prompt(5, 1, vocab_of(m.model));
    waste_error error{};
    for (waste_session* s : m.sessions) ASSERT_EQ(waste_session_eval(s, p.data(), p.size(), &error), WASTE_OK);
    const std::vector<float> before = waste_test::session_logits(m.sessions[0]);
    auto refused = [&](std::vector<waste_session*> members, std::vector<int32_t> tokens, waste_status status, const std::string& says) {
        waste_error e{};
        EXPECT_EQ(waste_session_eval_batch(members.data(), tokens.data(), members.size(), &e), status) << says;
        EXPECT_NE(std::string(e.message).find(says), std::string::npos) << e.message;
        for (waste_session* s : m.sessions) EXPECT_EQ(waste_session_position(s), p.size()) << says;
        EXPECT_EQ(waste_test::session_logits(m.sessions[0]), before) << says;
    };
    refused({m.sessions[0], m.sessions[1], m.sessions[0]}, {1, 2, 3}, WASTE_ERR_INVALID_ARGUMENT, "session 2 of the batch is session 0");
    refused({m.sessions[0], nullptr}, {1, 2}, WASTE_ERR_INVALID_ARGUMENT, "session 1 is NULL");
    refused({m.sessions[0], m.sessions[1]}, {1, 1 << 30}, WASTE_ERR_INVALID_ARGUMENT, "token 1 of the batch");
    refused({m.sessions[0]}, {-1}, WASTE_ERR_INVALID_ARGUMENT, "token 0 of the batch");
    EXPECT_EQ(waste_session_eval_batch(nullptr, nullptr, 0, &error), WASTE_ERR_INVALID_ARGUMENT);
    // session 2 full: the context holds 64
    const std::vector<int32_t> fill = prompt(64 - p.size(), 2, vocab_of(m.model));
    ASSERT_EQ(waste_session_eval(m.sessions[2], fill.data(), fill.size(), &error), WASTE_OK) << error.message;
    waste_error e{};
    const std::vector<int32_t> tokens{1, 2, 3};
    EXPECT_EQ(waste_session_eval_batch(m.sessions.data(), tokens.data(), 3, &e), WASTE_ERR_CONTEXT_FULL);
    EXPECT_NE(std::string(e.message).find("session 2 of the batch holds 64 of 64"), std::string::npos) << e.message;
    EXPECT_EQ(waste_session_position(m.sessions[0]), p.size());
    EXPECT_EQ(waste_test::session_logits(m.sessions[0]), before);
}

TEST(BatchStep, EachMemberCountsOneTokenAndTheSharesAddUp) {
    Model m;
    open(m, "tiny-qwen3", false, 2, 3, kFloor);  // streamed
    const int32_t vocab = vocab_of(m.model);
    waste_error error{};
    for (size_t i = 0; i < 3; ++i) {
        const std::vector<int32_t> p = prompt(4 + i, 10 + i, vocab);
        ASSERT_EQ(waste_session_eval(m.sessions[i], p.data(), p.size(), &error), WASTE_OK);
    }
    std::vector<waste_session_stats> before(3), after(3);
    for (size_t i = 0; i < 3; ++i) waste_session_stats_get(m.sessions[i], &before[i], nullptr);
    const std::vector<int32_t> tokens{5, 6, 7};
    ASSERT_EQ(waste_session_eval_batch(m.sessions.data(), tokens.data(), 3, &error), WASTE_OK) << error.message;
    uint64_t lookups = 0;
    for (size_t i = 0; i < 3; ++i) {
        waste_session_stats_get(m.sessions[i], &after[i], nullptr);
        EXPECT_EQ(after[i].tokens - before[i].tokens, 1u);
        lookups += (after[i].expert_hits - before[i].expert_hits) + (after[i].expert_misses - before[i].expert_misses);
    }
    // tiny-qwen3: 4 MoE layers, top-4 of 16; 3 tokens look up the distinct
    // experts of their union per layer: at least 4, at most 12 a layer.
    EXPECT_GE(lookups, 4u * 4u);
    EXPECT_LE(lookups, 4u * 12u);
}

}  // namespace
