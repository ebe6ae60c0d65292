// generate_test.cpp — generation, stop conditions, chat turns and the
// session state file through the C API, on a synthetic tiny container.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "test_support.h"
#include "waste/waste.h"

namespace {

namespace fs = std::filesystem;

struct Model {
    waste_model* model = nullptr;
    waste_tokenizer* tokenizer = nullptr;
    ~Model() {
        waste_tokenizer_free(tokenizer);
        waste_model_close(model);
    }
};

class Generate : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        dir_ = new waste_test::TempDir();
        waste_error error{};
        ASSERT_EQ(waste_synth((dir_->path() / "tiny").c_str(), "tiny", 3, nullptr, nullptr, nullptr, &error), WASTE_OK)
            << error.message;
        ASSERT_EQ(waste_synth((dir_->path() / "k3").c_str(), "tiny-k3", 3, nullptr, nullptr, nullptr, &error), WASTE_OK)
            << error.message;
        // A vocabulary larger than its tokenizer: 256 ranks and 10 specials
        // (ids 0-265), then 758 reserved ids, so that most of what the
        // untrained model draws has no bytes.
        ASSERT_EQ(waste_synth((dir_->path() / "reserved").c_str(), "tiny", 3,
                              R"({"vocab_size": 1024, "reserved_tokens": 758})", nullptr, nullptr, &error),
                  WASTE_OK)
            << error.message;
    }
    static void TearDownTestSuite() {
        delete dir_;
        dir_ = nullptr;
    }

    static std::unique_ptr<Model> open(const std::string& name, uint32_t ctx = 256) {
        auto m = std::make_unique<Model>();
        waste_open_options options;
        waste_open_options_init(&options);
        options.context_length = ctx;
        options.threads = 1;
        waste_error error{};
        EXPECT_EQ(waste_model_open((dir_->path() / name).c_str(), &options, &m->model, &error), WASTE_OK) << error.message;
        EXPECT_EQ(waste_model_tokenizer(m->model, nullptr, &m->tokenizer, &error), WASTE_OK) << error.message;
        return m;
    }

    static waste_session* session(const Model& m) {
        waste_session* s = nullptr;
        waste_error error{};
        EXPECT_EQ(waste_session_create(m.model, &s, &error), WASTE_OK) << error.message;
        return s;
    }

    static std::vector<int32_t> tokenize(const Model& m, const std::string& text, uint32_t flags = 0) {
        int32_t* ids = nullptr;
        size_t count = 0;
        waste_error error{};
        EXPECT_EQ(waste_tokenizer_tokenize(m.tokenizer, text.data(), text.size(), flags, &ids, &count, &error), WASTE_OK);
        std::vector<int32_t> out(ids, ids + count);
        waste_tokens_free(ids);
        return out;
    }

    static void eval(waste_session* s, const std::vector<int32_t>& ids) {
        waste_error error{};
        ASSERT_EQ(waste_session_eval(s, ids.data(), ids.size(), &error), WASTE_OK) << error.message;
    }

    static inline waste_test::TempDir* dir_ = nullptr;
};

struct Collected {
    std::vector<int32_t> tokens;
    std::vector<float> logprobs;
    std::vector<std::string> pieces;  // per token (and a last -1 entry's text appended to text)
    std::string text;
    int stop_after = -1;  // callback returns 1 after this many tokens
};

int collect(const waste_generated* step, void* user) {
    auto* c = static_cast<Collected*>(user);
    c->text.append(step->text, step->text_length);
    if (step->token < 0) return 0;
    c->tokens.push_back(step->token);
    c->logprobs.push_back(step->logprob);
    c->pieces.emplace_back(step->text, step->text_length);
    return c->stop_after >= 0 && static_cast<int>(c->tokens.size()) >= c->stop_after;
}

waste_generate_result generate(waste_session* s, waste_sampler* sampler, uint32_t n, Collected& out,
                               const waste_tokenizer* tokenizer = nullptr, std::vector<const char*> stops = {},
                               std::vector<int32_t> stop_tokens = {}, uint32_t flags = WASTE_GENERATE_IGNORE_EOS) {
    waste_generate_options options;
    waste_generate_options_init(&options);
    options.max_tokens = n;
    options.flags = flags;
    options.tokenizer = tokenizer;
    options.stop_strings = stops.data();
    options.stop_string_count = stops.size();
    options.stop_tokens = stop_tokens.data();
    options.stop_token_count = stop_tokens.size();
    waste_generate_result result{};
    waste_error error{};
    EXPECT_EQ(waste_session_generate(s, sampler, &options, collect, &out, &result, &error), WASTE_OK) << error.message;
    return result;
}

waste_sampler* make_sampler(double temperature, uint64_t seed) {
    waste_sampler_options o;
    waste_sampler_options_init(&o);
    o.temperature = temperature;
    o.top_p = 0.95;
    o.seed = seed;
    waste_sampler* sampler = nullptr;
    waste_error error{};
    EXPECT_EQ(waste_sampler_create(&o, &sampler, &error), WASTE_OK) << error.message;
    return sampler;
}

TEST_F(Generate, SavedAndReloadedSessionContinuesExactly) {
    auto m = open("tiny");
    const auto prompt = tokenize(*m, "Once upon a time the");
    for (double temperature : {0.0, 0.9}) {
        SCOPED_TRACE(temperature);
        // Uninterrupted: 16 tokens in one call.
        waste_session* whole = session(*m);
        eval(whole, prompt);
        waste_sampler* s1 = temperature > 0 ? make_sampler(temperature, 77) : nullptr;
        Collected all;
        EXPECT_EQ(generate(whole, s1, 16, all).tokens, 16u);
        // 8, save, load into a fresh session, 8 more with the same sampler.
        waste_session* first = session(*m);
        eval(first, prompt);
        waste_sampler* s2 = temperature > 0 ? make_sampler(temperature, 77) : nullptr;
        Collected head, tail;
        generate(first, s2, 8, head);
        const std::string path = (dir_->path() / "state.wdas").string();
        waste_error error{};
        ASSERT_EQ(waste_state_save(first, path.c_str(), &error), WASTE_OK) << error.message;
        EXPECT_EQ(waste_session_position(first), prompt.size() + 8);
        waste_session* second = session(*m);
        ASSERT_EQ(waste_state_load(second, path.c_str(), &error), WASTE_OK) << error.message;
        EXPECT_EQ(waste_session_position(second), prompt.size() + 8);
        // The reloaded logits are the saved session's, bit for bit.
        const auto a = waste_test::session_logits(first), b = waste_test::session_logits(second);
        ASSERT_EQ(a.size(), b.size());
        EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
        generate(second, s2, 8, tail);
        std::vector<int32_t> joined = head.tokens;
        joined.insert(joined.end(), tail.tokens.begin(), tail.tokens.end());
        EXPECT_EQ(joined, all.tokens);
        waste_session_free(whole);
        waste_session_free(first);
        waste_session_free(second);
        waste_sampler_free(s1);
        waste_sampler_free(s2);
    }
}

TEST_F(Generate, TwoCallsEqualOneAndEveryTokenIsHeld) {
    auto m = open("tiny");
    const auto prompt = tokenize(*m, "The cat");
    waste_session* one = session(*m);
    eval(one, prompt);
    Collected all;
    generate(one, nullptr, 10, all);
    EXPECT_EQ(waste_session_position(one), prompt.size() + 10);
    waste_session* two = session(*m);
    eval(two, prompt);
    Collected a, b;
    generate(two, nullptr, 4, a);
    generate(two, nullptr, 6, b);
    a.tokens.insert(a.tokens.end(), b.tokens.begin(), b.tokens.end());
    EXPECT_EQ(a.tokens, all.tokens);
    // The old greedy entry point agrees on the first tokens.
    waste_session* greedy = session(*m);
    eval(greedy, prompt);
    std::vector<int32_t> out(10);
    size_t count = 0;
    waste_error error{};
    ASSERT_EQ(waste_session_generate_greedy(greedy, out.size(), out.data(), &count, nullptr, nullptr, &error), WASTE_OK);
    out.resize(count);
    std::vector<int32_t> head(all.tokens.begin(), all.tokens.begin() + static_cast<long>(count));
    EXPECT_EQ(out, head);
    // Logprobs are log-softmax values: negative, finite.
    for (float lp : all.logprobs) EXPECT_TRUE(lp <= 0 && std::isfinite(lp));
    waste_session_free(one);
    waste_session_free(two);
    waste_session_free(greedy);
}

// Every id below the model's vocabulary is a legal output, greedy and
// sampled, with the model's tokenizer or one opened from its rank file (which
// does not know the model's vocabulary): a reserved id streams no text.
TEST_F(Generate, ReservedIdsOfALargerVocabularyAreGeneratedWithoutText) {
    constexpr int32_t tokenizer_ids = 266, vocab = 1024;
    auto m = open("reserved");
    ASSERT_EQ(waste_tokenizer_token_count(m->tokenizer), static_cast<uint32_t>(vocab));
    const fs::path dir = dir_->path() / "reserved";
    const std::string specials = waste_test::read_file(dir / "specials.json");
    waste_tokenizer* from_file = nullptr;
    waste_error error{};
    ASSERT_EQ(waste_tokenizer_open((dir / "tokenizer.model").c_str(), "kimi", specials.c_str(), &from_file, &error), WASTE_OK)
        << error.message;
    ASSERT_EQ(waste_tokenizer_token_count(from_file), static_cast<uint32_t>(tokenizer_ids));
    const auto prompt = tokenize(*m, "Once upon a time");
    for (const waste_tokenizer* tokenizer : {static_cast<const waste_tokenizer*>(m->tokenizer), static_cast<const waste_tokenizer*>(from_file)}) {
        for (double temperature : {0.0, 1.0}) {
            SCOPED_TRACE(testing::Message() << "temperature " << temperature << (tokenizer == from_file ? ", rank-file tokenizer" : ""));
            waste_session* s = session(*m);
            eval(s, prompt);
            ASSERT_EQ(waste_test::session_logits(s).size(), static_cast<size_t>(vocab));
            waste_sampler* sampler = temperature > 0 ? make_sampler(temperature, 5) : nullptr;
            Collected out;
            const waste_generate_result result = generate(s, sampler, 24, out, tokenizer);
            EXPECT_EQ(result.tokens, 24u);
            ASSERT_EQ(out.tokens.size(), 24u);
            size_t reserved = 0;
            std::vector<int32_t> known;
            for (size_t i = 0; i < out.tokens.size(); ++i) {
                EXPECT_GE(out.tokens[i], 0);
                EXPECT_LT(out.tokens[i], vocab);
                if (out.tokens[i] >= tokenizer_ids) {
                    ++reserved;
                    EXPECT_EQ(out.pieces[i], "") << "reserved id " << out.tokens[i];
                } else {
                    known.push_back(out.tokens[i]);
                }
            }
            // Without a reserved id drawn the test would prove nothing.
            EXPECT_GT(reserved, 0u) << "no reserved id among " << testing::PrintToString(out.tokens);
            // The text is that of the ids that have bytes; the model's
            // tokenizer detokenizes the whole list to the same.
            char* text = nullptr;
            size_t length = 0;
            ASSERT_EQ(waste_tokenizer_detokenize(m->tokenizer, out.tokens.data(), out.tokens.size(), 0, &text, &length, &error), WASTE_OK)
                << error.message;
            EXPECT_EQ(out.text, std::string(text, length));
            waste_string_free(text);
            ASSERT_EQ(waste_tokenizer_detokenize(from_file, known.data(), known.size(), 0, &text, &length, &error), WASTE_OK)
                << error.message;
            EXPECT_EQ(out.text, std::string(text, length));
            waste_string_free(text);
            waste_sampler_free(sampler);
            waste_session_free(s);
        }
    }
    waste_tokenizer_free(from_file);
    // Ids at or above the model's vocabulary stay an error.
    waste_session* s = session(*m);
    const int32_t beyond = vocab;
    EXPECT_EQ(waste_session_eval(s, &beyond, 1, &error), WASTE_ERR_INVALID_ARGUMENT);
    char* text = nullptr;
    EXPECT_EQ(waste_tokenizer_detokenize(m->tokenizer, &beyond, 1, 0, &text, nullptr, &error), WASTE_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(error.message).find("token 1024 is not in the vocabulary"), std::string::npos) << error.message;
    waste_session_free(s);
}

TEST_F(Generate, StopStringSpanningTokensEndsTheTextBeforeIt) {
    auto m = open("tiny");
    const auto prompt = tokenize(*m, "She said that");
    waste_session* s = session(*m);
    eval(s, prompt);
    Collected full;
    generate(s, nullptr, 40, full, m->tokenizer);
    // A stop string made of the end of one token's text and the start of the
    // next one's, whose first occurrence is exactly there.
    std::string stop;
    size_t expected_end = 0, offset = 0;
    for (size_t i = 0; i + 1 < full.pieces.size() && stop.empty(); ++i) {
        offset += full.pieces[i].size();
        const std::string& left = full.pieces[i];
        const std::string& right = full.pieces[i + 1];
        if (left.empty() || right.empty()) continue;
        const std::string candidate = left.substr(left.size() - 1) + right.substr(0, 1);
        if (full.text.find(candidate) == offset - 1) {
            stop = candidate;
            expected_end = offset - 1;
        }
    }
    ASSERT_FALSE(stop.empty()) << "no token boundary to test in: " << full.text;
    waste_session* again = session(*m);
    eval(again, prompt);
    Collected cut;
    const auto result = generate(again, nullptr, 40, cut, m->tokenizer, {"\x01never", stop.c_str()});
    EXPECT_EQ(result.stop_reason, WASTE_STOP_STRING);
    EXPECT_EQ(result.stop_index, 1);
    EXPECT_EQ(cut.text, full.text.substr(0, expected_end));
    waste_session_free(s);
    waste_session_free(again);
}

TEST_F(Generate, StopTokensEosAndCallbackStop) {
    auto m = open("tiny");
    const auto prompt = tokenize(*m, "A dog");
    waste_session* s = session(*m);
    eval(s, prompt);
    Collected full;
    generate(s, nullptr, 12, full, m->tokenizer);
    ASSERT_EQ(full.tokens.size(), 12u);
    const int32_t stop_token = full.tokens[5];
    const size_t first = static_cast<size_t>(std::find(full.tokens.begin(), full.tokens.end(), stop_token) - full.tokens.begin());

    waste_session* t = session(*m);
    eval(t, prompt);
    Collected cut;
    auto result = generate(t, nullptr, 12, cut, m->tokenizer, {}, {999999, stop_token});
    EXPECT_EQ(result.stop_reason, WASTE_STOP_TOKEN);
    EXPECT_EQ(result.stop_index, 1);
    EXPECT_EQ(cut.tokens.size(), first + 1);
    EXPECT_TRUE(cut.pieces.back().empty()) << "a stop token's text is not shown";
    EXPECT_EQ(waste_session_position(t), prompt.size() + first + 1);

    // The container's EOS stops unless ignored (the synthetic EOS is <|end_of_msg|>).
    const int32_t eos = waste_tokenizer_eos(m->tokenizer);
    ASSERT_GE(eos, 0);
    waste_session_reset(t, nullptr);
    eval(t, prompt);
    Collected user_stop;
    user_stop.stop_after = 3;
    result = generate(t, nullptr, 12, user_stop, m->tokenizer, {}, {}, 0);
    if (std::find(user_stop.tokens.begin(), user_stop.tokens.end(), eos) == user_stop.tokens.end()) {
        EXPECT_EQ(result.stop_reason, WASTE_STOP_CALLBACK);
        EXPECT_EQ(user_stop.tokens.size(), 3u);
    } else {
        EXPECT_EQ(result.stop_reason, WASTE_STOP_EOS);
    }
    waste_session_free(s);
    waste_session_free(t);
}

// Every EOS id the model lists ends a generation (issue 37): config.json's
// eos_token_id may be a list (GLM-4.5: three ids) and generation_config.json
// adds its own (Qwen3: two). The untrained model rarely emits an EOS id, so
// a container's generation_config.json lists the 5th greedy token.
TEST_F(Generate, EveryEosIdOfTheModelStops) {
    // tiny-glm's config.json lists three, as GLM-4.5's does ([EOS], <|end_of_msg|>, <|close|>)
    waste_error error{};
    ASSERT_EQ(waste_synth((dir_->path() / "glm").c_str(), "tiny-glm", 3, nullptr, nullptr, nullptr, &error), WASTE_OK)
        << error.message;
    {
        auto glm = open("glm");
        const int32_t eos = waste_tokenizer_special_id(glm->tokenizer, "[EOS]");
        const std::vector<int32_t> want = {eos, waste_tokenizer_special_id(glm->tokenizer, "<|end_of_msg|>"),
                                           waste_tokenizer_special_id(glm->tokenizer, "<|close|>")};
        std::vector<int32_t> got(waste_tokenizer_eos_ids(glm->tokenizer, nullptr, 0));
        EXPECT_EQ(waste_tokenizer_eos_ids(glm->tokenizer, got.data(), got.size()), 3u);
        EXPECT_EQ(got, want);
        EXPECT_EQ(waste_tokenizer_eos(glm->tokenizer), eos);
        int32_t first = -1;
        EXPECT_EQ(waste_tokenizer_eos_ids(glm->tokenizer, &first, 1), 3u) << "counts all, writes what fits";
        EXPECT_EQ(first, eos);
        char* info = nullptr;
        ASSERT_EQ(waste_model_info_json(glm->model, &info, &error), WASTE_OK) << error.message;
        EXPECT_EQ(nlohmann::json::parse(info).at("eos_ids").get<std::vector<int32_t>>(), want);
        waste_string_free(info);
    }

    ASSERT_EQ(waste_synth((dir_->path() / "eos-list").c_str(), "tiny", 3, nullptr, nullptr, nullptr, &error), WASTE_OK)
        << error.message;
    std::vector<int32_t> prompt, free_tokens;
    int32_t config_eos = -1;
    {
        auto m = open("eos-list");
        config_eos = waste_tokenizer_eos(m->tokenizer);
        prompt = tokenize(*m, "one two three");
        waste_session* s = session(*m);
        eval(s, prompt);
        Collected all;
        generate(s, nullptr, 12, all, m->tokenizer);
        free_tokens = all.tokens;
        waste_session_free(s);
    }
    ASSERT_EQ(free_tokens.size(), 12u);
    const int32_t extra = free_tokens[4];
    // The first token generate stops at: the config's EOS or the listed one.
    size_t first = 0;
    while (first < free_tokens.size() && free_tokens[first] != extra && free_tokens[first] != config_eos) ++first;
    ASSERT_LE(first, 4u);
    waste_test::write_file(dir_->path() / "eos-list" / "generation_config.json",
                           fmt::format(R"({{"bos_token_id": null, "eos_token_id": [{}, {}], "pad_token_id": [0], "do_sample": true}})",
                                       extra, config_eos));
    auto m = open("eos-list");
    std::vector<int32_t> ids(waste_tokenizer_eos_ids(m->tokenizer, nullptr, 0));
    waste_tokenizer_eos_ids(m->tokenizer, ids.data(), ids.size());
    EXPECT_EQ(ids, (extra == config_eos ? std::vector<int32_t>{config_eos} : std::vector<int32_t>{config_eos, extra}));
    waste_session* s = session(*m);
    eval(s, prompt);
    Collected cut;
    auto result = generate(s, nullptr, 12, cut, m->tokenizer, {}, {}, 0);
    EXPECT_EQ(result.stop_reason, WASTE_STOP_EOS);
    EXPECT_EQ(cut.tokens, std::vector<int32_t>(free_tokens.begin(), free_tokens.begin() + static_cast<long>(first) + 1));
    // the greedy helper stops there too
    waste_session_reset(s, nullptr);
    eval(s, prompt);
    std::vector<int32_t> greedy(12);
    size_t count = 0;
    ASSERT_EQ(waste_session_generate_greedy(s, greedy.size(), greedy.data(), &count, nullptr, nullptr, &error), WASTE_OK)
        << error.message;
    EXPECT_EQ(count, first + 1);
    // ignored, it runs on
    waste_session_reset(s, nullptr);
    eval(s, prompt);
    Collected on;
    result = generate(s, nullptr, 12, on, m->tokenizer);
    EXPECT_EQ(on.tokens, free_tokens);
    waste_session_free(s);
    m.reset();

    // A malformed generation_config.json is refused at open, naming the file and key.
    const std::pair<const char*, const char*> bad[] = {
        {R"({"eos_token_id": "2"})", "generation_config.json.eos_token_id: expected a token id or a list of ids"},
        {R"({"eos_token_id": [1, "2"]})", "generation_config.json.eos_token_id[1]: expected a token id"},
        {R"({"eos_token_id": [1, 100000]})", "generation_config.json.eos_token_id[1]: 100000 is out of range [0, 315]"},
        {R"({"eos_token_id": [-1]})", "generation_config.json.eos_token_id[0]: -1 is out of range"},
        {R"([1, 2])", "generation_config.json: expected a JSON object"},
        {"{", "generation_config.json: not JSON"},
    };
    for (const auto& [text, message] : bad) {
        SCOPED_TRACE(text);
        waste_test::write_file(dir_->path() / "eos-list" / "generation_config.json", text);
        waste_open_options options;
        waste_open_options_init(&options);
        options.flags = WASTE_OPEN_METADATA_ONLY;
        waste_model* model = nullptr;
        EXPECT_EQ(waste_model_open((dir_->path() / "eos-list").c_str(), &options, &model, &error), WASTE_ERR_FORMAT);
        EXPECT_NE(std::string(error.message).find(message), std::string::npos) << error.message;
        waste_model_close(model);
    }
}

TEST_F(Generate, FullContextStopsWithEveryEmittedTokenHeld) {
    const uint32_t ctx = 12;
    auto m = open("tiny", ctx);
    const auto prompt = tokenize(*m, "one two three");
    ASSERT_LT(prompt.size() + 3, ctx);
    waste_session* s = session(*m);
    eval(s, prompt);
    Collected out;
    const auto result = generate(s, nullptr, 100, out);
    EXPECT_EQ(result.stop_reason, WASTE_STOP_CONTEXT);
    EXPECT_EQ(out.tokens.size(), ctx - prompt.size());
    EXPECT_EQ(waste_session_position(s), ctx);
    waste_error error{};
    EXPECT_EQ(waste_state_save(s, (dir_->path() / "full.wdas").c_str(), &error), WASTE_OK) << error.message;
    waste_session_free(s);
}

TEST_F(Generate, HostileStateFilesAreRefusedAndResetTheSession) {
    auto m = open("tiny");
    waste_session* s = session(*m);
    eval(s, tokenize(*m, "Some words to fill the state"));
    const std::string good = (dir_->path() / "good.wdas").string();
    waste_error error{};
    ASSERT_EQ(waste_state_save(s, good.c_str(), &error), WASTE_OK) << error.message;
    const std::string bytes = waste_test::read_file(good);
    ASSERT_GT(bytes.size(), 64u);
    uint32_t magic = 0;
    std::memcpy(&magic, bytes.data(), 4);
    EXPECT_EQ(magic, 0x53414457u);

    waste_session* target = session(*m);
    auto expect_refused = [&](const std::string& content, waste_status status, const std::string& says) {
        const std::string path = (dir_->path() / "bad.wdas").string();
        waste_test::write_file(path, content);
        eval(target, tokenize(*m, "prior"));  // the session holds something before
        waste_error e{};
        EXPECT_EQ(waste_state_load(target, path.c_str(), &e), status) << says << ": " << e.message;
        EXPECT_NE(std::string(e.message).find(says), std::string::npos) << e.message;
        EXPECT_EQ(waste_session_position(target), 0u) << "a refused load resets the session";
    };
    auto patched = [&](size_t at, int32_t value) {
        std::string copy = bytes;
        std::memcpy(copy.data() + at, &value, 4);
        return copy;
    };
    expect_refused(bytes.substr(0, bytes.size() - 1), WASTE_ERR_CORRUPT, "truncated");
    expect_refused(bytes.substr(0, 40), WASTE_ERR_CORRUPT, "header");
    expect_refused(bytes + "x", WASTE_ERR_CORRUPT, "trailing");
    expect_refused("", WASTE_ERR_CORRUPT, "header");
    expect_refused(patched(0, 0x12345678), WASTE_ERR_FORMAT, "magic");
    expect_refused(patched(4, 2), WASTE_ERR_FORMAT, "version 2");
    expect_refused(patched(8 + 4 * 1, 256), WASTE_ERR_FORMAT, "hidden 256");
    expect_refused(patched(8 + 4 * 0, 5), WASTE_ERR_FORMAT, "n_layers 5");
    expect_refused(patched(8 + 4 * 10, 100000), WASTE_ERR_FORMAT, "pos 100000");
    expect_refused(patched(8 + 4 * 10, -1), WASTE_ERR_FORMAT, "pos -1");
    expect_refused(patched(8 + 4 * 10, 3), WASTE_ERR_CORRUPT, "bytes");  // size no longer matches pos
    expect_refused(patched(8 + 4 * 11, 9), WASTE_ERR_FORMAT, "n_block_residuals");
    const float nan = NAN;
    int32_t nan_bits = 0;
    std::memcpy(&nan_bits, &nan, 4);
    expect_refused(patched(bytes.size() - 8, nan_bits), WASTE_ERR_CORRUPT, "non-finite");
    expect_refused(patched(100, nan_bits), WASTE_ERR_CORRUPT, "non-finite");
    {
        waste_error e{};
        EXPECT_EQ(waste_state_load(target, (dir_->path() / "absent.wdas").c_str(), &e), WASTE_ERR_IO);
        EXPECT_NE(std::string(e.message).find("absent.wdas"), std::string::npos) << e.message;
    }
    // Every single-byte change of the header: refused or (reserved bytes) accepted, never a crash.
    for (size_t at = 0; at < 64; ++at) {
        std::string copy = bytes;
        copy[at] = static_cast<char>(copy[at] ^ 0x5a);
        const std::string path = (dir_->path() / "flip.wdas").string();
        waste_test::write_file(path, copy);
        waste_error e{};
        const waste_status status = waste_state_load(target, path.c_str(), &e);
        if (at >= 56) EXPECT_EQ(status, WASTE_OK) << "reserved byte " << at;
        else EXPECT_NE(status, WASTE_OK) << "byte " << at;
    }
    // Another model's state: the K3-shaped preset.
    auto k3 = open("k3");
    waste_session* other = session(*k3);
    eval(other, tokenize(*k3, "hello"));
    const std::string foreign = (dir_->path() / "k3.wdas").string();
    ASSERT_EQ(waste_state_save(other, foreign.c_str(), &error), WASTE_OK) << error.message;
    EXPECT_EQ(waste_state_load(target, foreign.c_str(), &error), WASTE_ERR_FORMAT);
    EXPECT_NE(std::string(error.message).find("saved from a model with"), std::string::npos) << error.message;
    // And the K3 shape round-trips through its own sessions (block residuals).
    waste_session* k3b = session(*k3);
    ASSERT_EQ(waste_state_load(k3b, foreign.c_str(), &error), WASTE_OK) << error.message;
    const auto x = waste_test::session_logits(other), y = waste_test::session_logits(k3b);
    EXPECT_EQ(std::memcmp(x.data(), y.data(), x.size() * sizeof(float)), 0);
    waste_session_free(other);
    waste_session_free(k3b);
    waste_session_free(s);
    waste_session_free(target);
}

TEST_F(Generate, ChatTurnsWrapPlainContentInMarkup) {
    auto m = open("tiny");
    waste_chat_template* chat = nullptr;
    waste_error error{};
    ASSERT_EQ(waste_model_chat_template(m->model, &chat, &error), WASTE_OK) << error.message;
    const std::string user = "hi <|open|> there";
    const waste_chat_message messages[] = {{"system", "Be brief.", 9}, {"user", user.c_str(), user.size()}};
    int32_t* ids = nullptr;
    size_t count = 0;
    ASSERT_EQ(waste_chat_tokenize(chat, m->tokenizer, messages, 2, 1, &ids, &count, &error), WASTE_OK) << error.message;
    std::vector<int32_t> got(ids, ids + count);
    waste_tokens_free(ids);
    // The same built by hand from chat.json's strings.
    const char *sp = nullptr, *ss = nullptr, *up = nullptr, *us = nullptr;
    ASSERT_EQ(waste_chat_template_role(chat, "system", &sp, &ss, &error), WASTE_OK);
    ASSERT_EQ(waste_chat_template_role(chat, "user", &up, &us, &error), WASTE_OK);
    std::vector<int32_t> want;
    for (auto [text, flags] : std::vector<std::pair<std::string, uint32_t>>{{sp, WASTE_TOKENIZE_MARKUP}, {"Be brief.", 0},
                                                                           {ss, WASTE_TOKENIZE_MARKUP}, {up, WASTE_TOKENIZE_MARKUP},
                                                                           {user, 0}, {us, WASTE_TOKENIZE_MARKUP},
                                                                           {waste_chat_template_open(chat), WASTE_TOKENIZE_MARKUP}}) {
        const auto part = tokenize(*m, text, flags);
        want.insert(want.end(), part.begin(), part.end());
    }
    EXPECT_EQ(got, want);
    // The markup is chat.json's, and the user's "<|open|>" is not the control token.
    const std::string chat_json = waste_test::read_file(dir_->path() / "tiny" / "chat.json");
    EXPECT_NE(chat_json.find(sp), std::string::npos);
    const int32_t open_id = waste_tokenizer_special_id(m->tokenizer, "<|open|>");
    ASSERT_GE(open_id, 0);
    EXPECT_EQ(std::count(got.begin(), got.end(), open_id), 3) << "system, user and answer openers only";
    char* text = nullptr;
    size_t length = 0;
    ASSERT_EQ(waste_tokenizer_detokenize(m->tokenizer, got.data(), got.size(), WASTE_TOKENIZE_MARKUP, &text, &length, &error),
              WASTE_OK);
    EXPECT_EQ(std::string(text, length), std::string(sp) + "Be brief." + ss + up + user + us + waste_chat_template_open(chat));
    waste_string_free(text);
    EXPECT_EQ(waste_chat_template_role(chat, "narrator", &sp, &ss, &error), WASTE_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(error.message).find("narrator"), std::string::npos);
    waste_chat_template_free(chat);
}

TEST_F(Generate, ContainerWithoutChatJsonSaysSo) {
    waste_open_options options;
    waste_open_options_init(&options);
    options.flags = WASTE_OPEN_METADATA_ONLY;
    waste_model* model = nullptr;
    waste_error error{};
    ASSERT_EQ(waste_model_open(waste_test::fixture("tiny-tok.waste").c_str(), &options, &model, &error), WASTE_OK) << error.message;
    waste_chat_template* chat = nullptr;
    EXPECT_EQ(waste_model_chat_template(model, &chat, &error), WASTE_ERR_UNSUPPORTED);
    EXPECT_NE(std::string(error.message).find("has no chat.json"), std::string::npos) << error.message;
    waste_model_close(model);
}

}  // namespace
