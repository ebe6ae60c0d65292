// sampler_test.cpp — the sampler against a straightforward reference of its
// definition (runtime/sampler.h), the stop-string matcher, and chat-template
// rendering.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include <fstream>

#include <nlohmann/json.hpp>

#include "format/model_config.h"
#include "platform/error.h"
#include "runtime/sampler.h"
#include "test_support.h"
#include "text/chat_template.h"
#include "text/stop_strings.h"
#include "waste/waste.h"

namespace {

using waste::runtime::Sampler;
using waste::runtime::SamplerOptions;

// Fixed logits with distinct values, ties (ids 3 and 7), and a -inf.
std::vector<float> fixed_logits() {
    return {1.5f, -0.25f, 3.0f, 2.25f, 0.0f, -3.0f, 0.75f, 2.25f, -INFINITY, 1.0f, -1.0f, 2.75f};
}

// The reference: every step written the obvious way, O(V^2) where that is simpler.
std::map<int32_t, double> reference(const std::vector<float>& logits, const SamplerOptions& o) {
    const int n = static_cast<int>(logits.size());
    std::map<int32_t, double> out;
    if (o.temperature == 0) {
        int best = 0;
        for (int i = 1; i < n; ++i)
            if (logits[i] > logits[best]) best = i;
        out[best] = 1;
        return out;
    }
    // rank of each token: how many come before it (higher logit, or equal and lower id)
    auto rank = [&](int i) {
        int r = 0;
        for (int j = 0; j < n; ++j)
            if (logits[j] > logits[i] || (logits[j] == logits[i] && j < i)) ++r;
        return r;
    };
    std::vector<double> p(n);
    double z = 0;
    for (int i = 0; i < n; ++i) z += std::exp(static_cast<double>(logits[i]) / o.temperature);
    for (int i = 0; i < n; ++i) p[i] = std::exp(static_cast<double>(logits[i]) / o.temperature) / z;
    std::set<int> keep;
    for (int i = 0; i < n; ++i)
        if (p[i] > 0 && (o.top_k == 0 || rank(i) < static_cast<int>(o.top_k))) keep.insert(i);
    if (o.top_p < 1) {
        double mass = 0;
        for (int i : keep) mass += p[i];
        std::set<int> nucleus;
        // smallest prefix (by rank) reaching top_p of the renormalised mass
        for (int r = 0; r < n; ++r) {
            for (int i : keep)
                if (rank(i) == r) nucleus.insert(i);
            double in = 0;
            for (int i : nucleus) in += p[i] / mass;
            if (in >= o.top_p - 1e-12) break;
        }
        keep = nucleus;
    }
    double pmax = 0;
    for (int i : keep) pmax = std::max(pmax, p[i]);
    std::set<int> kept;
    for (int i : keep)
        if (p[i] >= o.min_p * pmax) kept.insert(i);
    double mass = 0;
    for (int i : kept) mass += p[i];
    for (int i : kept) out[i] = p[i] / mass;
    return out;
}

void expect_matches_reference(const SamplerOptions& o, const std::vector<float>& logits = fixed_logits()) {
    Sampler sampler(o);
    const auto got = sampler.candidates(logits);
    const auto want = reference(logits, o);
    std::map<int32_t, double> got_map;
    for (const auto& c : got) got_map[c.id] = c.probability;
    ASSERT_EQ(got_map.size(), want.size()) << "T=" << o.temperature << " k=" << o.top_k << " p=" << o.top_p << " m=" << o.min_p;
    for (const auto& [id, prob] : want) {
        ASSERT_TRUE(got_map.count(id)) << "token " << id << " missing";
        // Tolerance 1e-12: both sides are f64 softmaxes of the same values.
        EXPECT_NEAR(got_map[id], prob, 1e-12) << "token " << id;
    }
}

TEST(Sampler, TruncationMasksMatchTheReference) {
    for (double t : {0.0, 0.3, 1.0, 2.5})
        for (uint32_t k : {0u, 1u, 2u, 3u, 4u, 12u, 50u})
            for (double p : {1.0, 0.9, 0.5, 0.1})
                for (double m : {0.0, 0.05, 0.3, 1.0}) expect_matches_reference(SamplerOptions{t, k, p, m, 1});
}

TEST(Sampler, TruncationOnAPeakedVocabularyMatchesTheReference) {
    // 400 logits spread like a model's (a few high, a long tail), so that the
    // shortcuts for top-p and min-p (no sort below a weight threshold) are taken.
    std::vector<float> logits(400);
    waste::runtime::SplitMix64 random(21);
    for (auto& l : logits) {
        const double u = random.unit();
        l = static_cast<float>(12 * u * u * u * u - 4);
    }
    for (double t : {0.5, 1.0, 1.7})
        for (uint32_t k : {0u, 50u})
            for (double p : {1.0, 0.95, 0.6})
                for (double m : {0.0, 0.001, 0.2}) expect_matches_reference(SamplerOptions{t, k, p, m, 1}, logits);
}

TEST(Sampler, TopKKeepsTheLowerIdOfATie) {
    // ids 3 and 7 tie at 2.25 behind 2 (3.0) and 11 (2.75): k = 3 keeps 3, not 7.
    Sampler sampler(SamplerOptions{1.0, 3, 1.0, 0.0, 1});
    std::vector<int32_t> ids;
    for (const auto& c : sampler.candidates(fixed_logits())) ids.push_back(c.id);
    EXPECT_EQ(ids, (std::vector<int32_t>{2, 11, 3}));
}

TEST(Sampler, SameSeedSameTokensOtherSeedOtherTokens) {
    const auto logits = fixed_logits();
    auto draw = [&](uint64_t seed) {
        Sampler sampler(SamplerOptions{1.5, 0, 0.95, 0.0, seed});
        std::vector<int32_t> out;
        for (int i = 0; i < 200; ++i) out.push_back(sampler.sample(logits).id);
        return out;
    };
    EXPECT_EQ(draw(42), draw(42));
    EXPECT_NE(draw(42), draw(43));
    // Pinned: the first draws of seed 42 (splitmix64, this definition). A change
    // here changes every seeded run users have recorded: make it only on purpose.
    const auto first = draw(42);
    EXPECT_EQ(std::vector<int32_t>(first.begin(), first.begin() + 10), (std::vector<int32_t>{7, 2, 11, 11, 2, 9, 2, 0, 11, 7}));
}

TEST(Sampler, FrequenciesFollowTheDistribution) {
    const auto logits = fixed_logits();
    const SamplerOptions o{0.8, 6, 0.97, 0.02, 7};
    const auto want = reference(logits, o);
    Sampler sampler(o);
    std::map<int32_t, int> counts;
    const int draws = 40000;
    for (int i = 0; i < draws; ++i) ++counts[sampler.sample(logits).id];
    for (const auto& [id, count] : counts) EXPECT_TRUE(want.count(id)) << "drew masked token " << id;
    for (const auto& [id, prob] : want) {
        // 5 binomial standard deviations: fails by chance with p < 1e-6 per token.
        const double sigma = std::sqrt(draws * prob * (1 - prob));
        EXPECT_NEAR(counts[id], draws * prob, 5 * sigma + 1) << "token " << id;
    }
}

TEST(Sampler, TemperatureTowardZeroIsGreedy) {
    // Random logits without ties: at T = 1e-4 the top logit's weight beats the
    // runner-up's by at least exp(gap / T), far beyond a double's resolution.
    std::vector<float> logits(1000);
    uint64_t state = 5;
    waste::runtime::SplitMix64 random(state);
    for (auto& l : logits) l = static_cast<float>(random.unit() * 20 - 10);
    std::vector<float> sorted = logits;
    std::sort(sorted.begin(), sorted.end());
    ASSERT_GT(sorted.back() - sorted[sorted.size() - 2], 1e-3f);
    const int32_t greedy = Sampler(SamplerOptions{}).sample(logits).id;
    Sampler cold(SamplerOptions{1e-4, 0, 1.0, 0.0, 9});
    for (int i = 0; i < 100; ++i) EXPECT_EQ(cold.sample(logits).id, greedy);
    EXPECT_EQ(greedy, std::max_element(logits.begin(), logits.end()) - logits.begin());
}

TEST(Sampler, GreedyTiesGoToTheLowerId) {
    const std::vector<float> logits = {0.0f, 2.0f, 1.0f, 2.0f};
    EXPECT_EQ(Sampler(SamplerOptions{}).sample(logits).id, 1);
}

TEST(Sampler, LogprobIsTheRawLogSoftmax) {
    const auto logits = fixed_logits();
    double z = 0;
    for (float l : logits) z += std::exp(static_cast<double>(l));
    for (double t : {0.0, 0.7, 3.0}) {
        Sampler sampler(SamplerOptions{t, 0, 1.0, 0.0, 3});
        for (int i = 0; i < 20; ++i) {
            const auto chosen = sampler.sample(logits);
            // 1e-12: f64 log-sum-exp of 12 values against the direct formula.
            EXPECT_NEAR(chosen.logprob, logits[chosen.id] - std::log(z), 1e-12) << "T=" << t;
        }
    }
    EXPECT_NEAR(waste::runtime::log_softmax_at(logits, 2), 3.0 - std::log(z), 1e-12);
}

TEST(Sampler, BadOptionsAndNaNAreRefused) {
    EXPECT_THROW(Sampler(SamplerOptions{-1, 0, 1, 0, 0}), waste::Error);
    EXPECT_THROW(Sampler(SamplerOptions{1, 0, 0, 0, 0}), waste::Error);
    EXPECT_THROW(Sampler(SamplerOptions{1, 0, 1.5, 0, 0}), waste::Error);
    EXPECT_THROW(Sampler(SamplerOptions{1, 0, 1, -0.1, 0}), waste::Error);
    EXPECT_THROW(Sampler(SamplerOptions{1e9, 0, 1, 0, 0}), waste::Error);
    std::vector<float> logits = {1.0f, NAN, 0.5f};
    Sampler sampler(SamplerOptions{1, 0, 1, 0, 0});
    EXPECT_THROW(sampler.sample(logits), waste::Error);
}

TEST(Sampler, CApiSamplesAndValidates) {
    waste_sampler_options options;
    waste_sampler_options_init(&options);
    EXPECT_EQ(options.temperature, 0.0);
    EXPECT_EQ(options.top_p, 1.0);
    waste_error error{};
    options.temperature = 1.0;
    options.seed = 11;
    waste_sampler* sampler = nullptr;
    ASSERT_EQ(waste_sampler_create(&options, &sampler, &error), WASTE_OK) << error.message;
    const auto logits = fixed_logits();
    int32_t token = -1;
    float logprob = 0;
    ASSERT_EQ(waste_sampler_sample(sampler, logits.data(), logits.size(), &token, &logprob, &error), WASTE_OK);
    EXPECT_GE(token, 0);
    EXPECT_LT(logprob, 0.0f);
    EXPECT_NE(token, 8);  // -inf never drawn
    waste_sampler_free(sampler);
    options.top_p = 0;
    EXPECT_EQ(waste_sampler_create(&options, &sampler, &error), WASTE_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(error.message).find("top_p"), std::string::npos) << error.message;
}

// ------------------------------------------------------------ stop strings

// Feeds pieces; returns everything emitted (pushes + finish).
std::string feed(waste::text::StopStringMatcher& m, const std::vector<std::string>& pieces) {
    std::string out;
    for (const auto& piece : pieces) out += m.push(piece);
    out += m.finish();
    return out;
}

TEST(StopStrings, MatchAcrossPiecesAndExcludeTheStop) {
    waste::text::StopStringMatcher m({"END"});
    EXPECT_EQ(feed(m, {"hello E", "N", "D and more"}), "hello ");
    EXPECT_TRUE(m.stopped());
    EXPECT_EQ(m.matched(), 0);
}

TEST(StopStrings, HoldOnlyWhatCouldStillStartAStop) {
    waste::text::StopStringMatcher m({"</s>", "###"});
    EXPECT_EQ(m.push("abc<"), "abc");    // "<" may begin "</s>"
    EXPECT_EQ(m.held_bytes(), 1u);
    EXPECT_EQ(m.push("/x"), "</x");      // "</x" cannot: released
    EXPECT_EQ(m.push("##"), "");         // "##" may begin "###"
    EXPECT_EQ(m.push("a"), "##a");
    EXPECT_EQ(m.finish(), "");
    EXPECT_FALSE(m.stopped());
}

TEST(StopStrings, HeldTailIsReleasedAtTheEnd) {
    waste::text::StopStringMatcher m({"STOP"});
    EXPECT_EQ(feed(m, {"x S", "TO"}), "x STO");
    EXPECT_FALSE(m.stopped());
}

TEST(StopStrings, SeveralAtOnceTheFirstCompleteWins) {
    {
        waste::text::StopStringMatcher m({"world", "lo w"});
        EXPECT_EQ(feed(m, {"hel", "lo", " wor", "ld"}), "hel");
        EXPECT_EQ(m.matched(), 1);
    }
    {
        // Both end at the same byte: the one starting earlier wins (less text shown).
        waste::text::StopStringMatcher m({"b", "ab"});
        EXPECT_EQ(feed(m, {"xa", "b"}), "x");
        EXPECT_EQ(m.matched(), 1);
    }
    {
        // A stop inside one piece, a longer one spanning: the earlier end wins.
        waste::text::StopStringMatcher m({"abcdef", "cd"});
        EXPECT_EQ(feed(m, {"ab", "cdef"}), "ab");
        EXPECT_EQ(m.matched(), 1);
    }
}

TEST(StopStrings, ByteByByteEqualsWholeText) {
    // Every split of a text into single bytes gives the same result as one push.
    const std::string text = "The answer is 42.\n\nUser: next ### question";
    for (const auto& stops : std::vector<std::vector<std::string>>{{"\n\nUser:"}, {"###"}, {"4", "answer"}, {"zzz"}}) {
        waste::text::StopStringMatcher whole(stops), bytes(stops);
        std::vector<std::string> singles;
        for (char c : text) singles.emplace_back(1, c);
        EXPECT_EQ(feed(whole, {text}), feed(bytes, singles));
        EXPECT_EQ(whole.matched(), bytes.matched());
    }
}

TEST(StopStrings, RandomSplitsAgreeWithAWholeTextReference) {
    // Over a 3-letter alphabet stops occur often and overlap; the reference
    // scans the whole text for the stop that ends first (then starts first).
    waste::runtime::SplitMix64 random(11);
    auto word = [&](size_t max_length) {
        std::string w(1 + random.below(max_length), 'a');
        for (char& c : w) c = static_cast<char>('a' + random.below(3));
        return w;
    };
    for (int round = 0; round < 3000; ++round) {
        std::vector<std::string> stops;
        for (uint64_t i = 0, n = 1 + random.below(3); i < n; ++i) stops.push_back(word(4));
        const std::string text = word(24);
        size_t best_start = std::string::npos;
        int best = -1;
        for (size_t end = 1; end <= text.size() && best < 0; ++end)
            for (size_t i = 0; i < stops.size(); ++i)
                if (stops[i].size() <= end && text.compare(end - stops[i].size(), stops[i].size(), stops[i]) == 0 &&
                    (best < 0 || end - stops[i].size() < best_start)) {
                    best = static_cast<int>(i);
                    best_start = end - stops[i].size();
                }
        std::vector<std::string> pieces;
        for (size_t at = 0; at < text.size();) {
            const size_t n = std::min<size_t>(1 + random.below(5), text.size() - at);
            pieces.push_back(text.substr(at, n));
            at += n;
        }
        waste::text::StopStringMatcher m(stops);
        const std::string got = feed(m, pieces);
        ASSERT_EQ(got, best < 0 ? text : text.substr(0, best_start)) << "text " << text << " round " << round;
        ASSERT_EQ(m.matched(), best) << "text " << text;
    }
}

TEST(StopStrings, EmptyStopIsRefused) {
    EXPECT_THROW(waste::text::StopStringMatcher({"a", ""}), waste::Error);
}

// ------------------------------------------------------------ chat template

TEST(ChatTemplate, ParsesAndRefusesMalformed) {
    const auto chat = waste::text::ChatTemplate::parse(
        R"({"system":["<s>","</s>"],"user":["<u>","</u>"],"assistant":["<a>","</a>"],"open":"<a>","tool":["[t]","[/t]"]})", "t");
    EXPECT_EQ(chat.open(), "<a>");
    EXPECT_EQ(chat.role("tool").first, "[t]");
    EXPECT_EQ(chat.role_names().size(), 4u);
    EXPECT_THROW(chat.role("nobody"), waste::Error);
    for (const char* bad : {"[]", "{", R"({"user":["a","b"],"assistant":["a","b"]})",
                            R"({"user":["a"],"assistant":["a","b"],"open":""})",
                            R"({"user":["a",1],"assistant":["a","b"],"open":""})",
                            R"({"user":["a","b"],"assistant":["a","b"],"open":7})",
                            R"({"assistant":["a","b"],"open":""})"}) {
        try {
            waste::text::ChatTemplate::parse(bad, "chat.json");
            ADD_FAILURE() << "accepted " << bad;
        } catch (const waste::Error& e) {
            EXPECT_EQ(e.status(), WASTE_ERR_FORMAT) << bad;
            EXPECT_NE(std::string(e.what()).find("chat.json"), std::string::npos) << e.what();
        }
    }
}

// A release's generation_config.json over the engine's defaults
// (format/model_config.h, waste_model_sampling_defaults): the fields it names,
// do_sample false as greedy, nulls as absent, a bad value refused by name.
TEST(SamplingDefaults, TheReleaseNamesWhatItNamesAndTheEngineTheRest) {
    using nlohmann::json;
    using waste::format::parse_sampling_defaults;
    const auto qwen = parse_sampling_defaults(json::parse(R"({"do_sample": true, "temperature": 0.6, "top_k": 20, "top_p": 0.95,
                                                                "eos_token_id": [1, 2], "repetition_penalty": 1.05})"),
                                              "generation_config.json");
    EXPECT_EQ(qwen.temperature, 0.6);
    EXPECT_EQ(qwen.top_k, 20u);
    EXPECT_EQ(qwen.top_p, 0.95);
    EXPECT_FALSE(qwen.min_p.has_value());
    const auto greedy = parse_sampling_defaults(json::parse(R"({"do_sample": false, "temperature": 0.6, "top_p": 0.9})"), "g");
    EXPECT_EQ(greedy.temperature, 0.0);
    EXPECT_FALSE(greedy.top_p.has_value());
    const auto nulls = parse_sampling_defaults(json::parse(R"({"temperature": null, "top_k": null, "min_p": 0.05})"), "g");
    EXPECT_FALSE(nulls.temperature.has_value());
    EXPECT_FALSE(nulls.top_k.has_value());
    EXPECT_EQ(nulls.min_p, 0.05);
    for (const char* bad : {R"({"temperature": "hot"})", R"({"temperature": -1})", R"({"temperature": 101})", R"({"top_p": 0})",
                            R"({"top_p": 1.5})", R"({"top_k": -1})", R"({"top_k": 2.5})", R"({"min_p": 2})",
                            R"({"do_sample": "yes"})", R"([1, 2])"}) {
        try {
            parse_sampling_defaults(json::parse(bad), "generation_config.json");
            ADD_FAILURE() << bad << " was accepted";
        } catch (const waste::Error& e) {
            EXPECT_EQ(e.status(), WASTE_ERR_FORMAT) << bad;
            EXPECT_NE(std::string(e.what()).find("generation_config.json"), std::string::npos) << e.what();
        }
    }

    // Through the C API: a container without the file gets the engine's,
    // with it the release's where named.
    waste_test::TempDir dir;
    waste_test::copy_container(waste_test::fixture("tiny-tok.waste"), dir / "m");
    auto defaults = [&](uint32_t* from) {
        waste_open_options options;
        waste_open_options_init(&options);
        options.flags = WASTE_OPEN_METADATA_ONLY;
        waste_model* model = nullptr;
        waste_error error{};
        EXPECT_EQ(waste_model_open((dir / "m").string().c_str(), &options, &model, &error), WASTE_OK) << error.message;
        waste_sampler_options out{};
        EXPECT_EQ(waste_model_sampling_defaults(model, &out, from, &error), WASTE_OK) << error.message;
        waste_model_close(model);
        return out;
    };
    uint32_t from = 99;
    waste_sampler_options engine = defaults(&from);
    EXPECT_EQ(from, 0u);
    EXPECT_EQ(engine.temperature, waste::runtime::engine_sampling_defaults.temperature);
    EXPECT_EQ(engine.top_p, waste::runtime::engine_sampling_defaults.top_p);
    EXPECT_EQ(engine.top_k, waste::runtime::engine_sampling_defaults.top_k);
    EXPECT_EQ(engine.min_p, waste::runtime::engine_sampling_defaults.min_p);
    std::ofstream(dir / "m" / "generation_config.json") << R"({"temperature": 0.6, "top_k": 20})";
    waste_sampler_options release = defaults(&from);
    EXPECT_EQ(from, static_cast<uint32_t>(WASTE_SAMPLING_TEMPERATURE | WASTE_SAMPLING_TOP_K));
    EXPECT_EQ(release.temperature, 0.6);
    EXPECT_EQ(release.top_k, 20u);
    EXPECT_EQ(release.top_p, waste::runtime::engine_sampling_defaults.top_p);
    EXPECT_EQ(release.seed, 0u);
    waste_error error{};
    EXPECT_EQ(waste_model_sampling_defaults(nullptr, &release, nullptr, &error), WASTE_ERR_INVALID_ARGUMENT);
}

}  // namespace
