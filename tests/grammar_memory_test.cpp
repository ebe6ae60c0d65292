// grammar_memory_test.cpp — constrained decoding stays inside the memory
// plan (grammar/grammar_memory.h): the plan reserves the vocabulary's trie
// and waste_open_options.grammars slots; the C API refuses a grammar or a
// grammar state beyond them; what a compiled grammar and a generation hold
// stays within a slot along real generations; and a grammar too ambiguous to
// mask within its slot fails with WASTE_ERR_BUDGET instead of growing.
// Exact bounds, no tolerance: the sizes are counted from the structures'
// capacities, and the plan may over-count but never under.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "api/grammar_slots.h"
#include "api/tokenizer_handle.h"
#include "grammar/gbnf_parser.h"
#include "grammar/grammar_memory.h"
#include "grammar/json_schema.h"
#include "grammar/token_mask.h"
#include "test_support.h"
#include "waste/waste.h"

namespace {

using nlohmann::json;
namespace g = waste::grammar;

json plan_json(waste_model* model) {
    char* text = nullptr;
    waste_error error{};
    EXPECT_EQ(waste_model_plan_json(model, nullptr, &text, &error), WASTE_OK) << error.message;
    const json plan = json::parse(text ? text : "{}");
    waste_string_free(text);
    return plan;
}

struct GrammarHandle {
    waste_grammar* grammar = nullptr;
    ~GrammarHandle() { waste_grammar_free(grammar); }
};

waste_status compile(waste_tokenizer* tokenizer, const std::string& gbnf, GrammarHandle& out, waste_error& error) {
    return waste_grammar_compile(tokenizer, WASTE_GRAMMAR_GBNF, gbnf.data(), gbnf.size(), &out.grammar, &error);
}

const std::string nested_schema = R"({"type":"object","properties":{
    "id":{"type":"integer","minimum":0,"maximum":100000},
    "name":{"type":"string","minLength":2,"maxLength":40},
    "tags":{"type":"array","items":{"enum":["red","green","blue"]},"maxItems":4},
    "items":{"type":"array","maxItems":3,"items":{"type":"object","properties":{"sku":{"type":"string","pattern":"^[A-Z]{3}-\\d{4}$"},
             "note":{"anyOf":[{"type":"string","maxLength":30},{"type":"null"}]}},"required":["sku"]}}},"required":["id","name","items"]})";

TEST(GrammarMemory, ThePlanReservesTheTrieAndEverySlot) {
    for (const uint32_t grammars : {0u, 3u}) {
        waste_test::SynthTokenizer t;
        ASSERT_NO_FATAL_FAILURE(waste_test::open_synth_tokenizer(t, 163840, grammars));
        const json plan = plan_json(t.model);
        const uint64_t file_bytes = std::filesystem::file_size(t.dir / "synth" / "tokenizer.model");
        const uint64_t expected =
            grammars ? g::vocabulary_trie_bound_bytes(163840, file_bytes) + g::grammar_compile_scratch_bytes(163840) +
                           grammars * g::grammar_slot_bytes(163840)
                     : 0;
        EXPECT_EQ(plan["grammars"].get<uint64_t>(), grammars);
        EXPECT_EQ(plan["grammar_bytes"].get<uint64_t>(), expected) << grammars << " slots";
        EXPECT_EQ(plan["floor_bytes"].get<uint64_t>(),
                  plan["trunk_bytes"].get<uint64_t>() + plan["state_bytes"].get<uint64_t>() + plan["scratch_bytes"].get<uint64_t>() +
                      plan["io_bytes"].get<uint64_t>() + plan["runtime_bytes"].get<uint64_t>() +
                      plan["snapshot_bytes"].get<uint64_t>() + expected + plan["min_expert_cache"].get<uint64_t>());
    }
}

TEST(GrammarMemory, BeyondThePlanIsRefusedAndGivenBackOnFree) {
    waste_test::SynthTokenizer t;
    ASSERT_NO_FATAL_FAILURE(waste_test::open_synth_tokenizer(t, 4096, 1));
    // Compiled grammars draw what they hold from a pool of one slot's
    // max_compiled_grammar_bytes (8 MiB): grammars of a megabyte or two
    // (10,000 alternatives of 11 elements) fit a few times, then the next
    // is refused.
    std::string big = "root ::= \"abcdefghij\"";
    for (int i = 1; i < 10000; ++i) big += " | \"abcdefghij\"";
    big += "\n";
    waste_error error{};
    {
        std::vector<std::unique_ptr<GrammarHandle>> held;
        waste_status status = WASTE_OK;
        while (held.size() < 16) {
            auto next = std::make_unique<GrammarHandle>();
            status = compile(t.tokenizer, big, *next, error);
            if (status != WASTE_OK) break;
            held.push_back(std::move(next));
        }
        ASSERT_GE(held.size(), 3u) << error.message;
        ASSERT_LT(held.size(), 16u);  // refused before the 16th
        EXPECT_EQ(status, WASTE_ERR_BUDGET);
        EXPECT_NE(std::string(error.message).find("waste_open_options.grammars"), std::string::npos) << error.message;
        held.pop_back();  // its bytes come back with the free
        GrammarHandle fifth;
        ASSERT_EQ(compile(t.tokenizer, big, fifth, error), WASTE_OK) << error.message;

        // One generation's state a slot.
        waste_grammar_state* state = nullptr;
        ASSERT_EQ(waste_grammar_state_create(fifth.grammar, nullptr, 0, &state, &error), WASTE_OK) << error.message;
        waste_grammar_state* another = nullptr;
        EXPECT_EQ(waste_grammar_state_create(held[0]->grammar, nullptr, 0, &another, &error), WASTE_ERR_BUDGET);
        EXPECT_EQ(another, nullptr);
        waste_grammar_state_free(state);
        ASSERT_EQ(waste_grammar_state_create(held[0]->grammar, nullptr, 0, &another, &error), WASTE_OK) << error.message;
        waste_grammar_state_free(another);
    }

    // Without grammar slots, a model's tokenizer compiles nothing: the plan
    // holds no memory for it.
    waste_test::SynthTokenizer none;
    ASSERT_NO_FATAL_FAILURE(waste_test::open_synth_tokenizer(none, 4096, 0));
    GrammarHandle refused;
    EXPECT_EQ(compile(none.tokenizer, "root ::= [a-z]+\n", refused, error), WASTE_ERR_BUDGET);
}

TEST(GrammarMemory, AGenerationStaysWithinItsSlot) {
    waste_test::SynthTokenizer t;
    ASSERT_NO_FATAL_FAILURE(waste_test::open_synth_tokenizer(t, 163840, 1));
    const uint64_t file_bytes = std::filesystem::file_size(t.dir / "synth" / "tokenizer.model");
    GrammarHandle handle;
    waste_error error{};
    ASSERT_EQ(waste_grammar_compile(t.tokenizer, WASTE_GRAMMAR_JSON_SCHEMA, nested_schema.data(), nested_schema.size(),
                                    &handle.grammar, &error),
              WASTE_OK)
        << error.message;
    const auto& trie = *t.tokenizer->grammar_slots->trie;
    EXPECT_LE(trie.memory_bytes(), g::vocabulary_trie_bound_bytes(163840, file_bytes));

    // Random-logit generations (the argmax of noise over the allowed
    // tokens: long strings, many states) along the same masker the C API
    // steps, its memory checked after every mask.
    const auto grammar = std::make_shared<const g::Grammar>(g::parse_gbnf(g::json_schema_to_gbnf(nested_schema)));
    const auto trie_ptr = t.tokenizer->grammar_slots->trie;
    const auto runs = std::make_shared<const g::RunClasses>(*grammar, *trie_ptr);
    EXPECT_LE(g::grammar_rule_bytes(*grammar) + runs->memory_bytes(), g::max_compiled_grammar_bytes);
    // The noise is drawn once and read at a random offset each step (drawing
    // 163,840 normals a step would be most of the test's time).
    std::mt19937_64 random(3);
    std::normal_distribution<float> normal(0, 3);
    std::vector<float> noise(2 * 163840);
    for (float& n : noise) n = normal(random);
    size_t masks = 0, peak = 0;
    for (int generation = 0; generation < 4; ++generation) {
        g::TokenMasker masker(grammar, trie_ptr, runs);
        std::vector<float> logits(163840);
        for (int step = 0; step < 300; ++step) {
            const size_t offset = random() % 163840;
            std::copy(noise.begin() + static_cast<std::ptrdiff_t>(offset),
                      noise.begin() + static_cast<std::ptrdiff_t>(offset + 163840), logits.begin());
            if (masker.mask_logits(logits, {}) == 0) break;
            ++masks;
            peak = std::max(peak, masker.memory_bytes());
            ASSERT_LE(masker.memory_bytes(), g::max_automaton_bytes + g::mask_cache_bytes(163840));
            const auto best = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
            ASSERT_TRUE(masker.accept(best, {}));
        }
    }
    EXPECT_GT(masks, 200u);
    std::printf("%zu masks, peak automaton + mask cache %zu bytes\n", masks, peak);
}

TEST(GrammarMemory, AGrammarTooAmbiguousForItsSlotFailsWithBudget) {
    // Thousands of literal alternatives that are the vocabulary's own
    // tokens: every prefix of every one is a distinct automaton state, so
    // the first mask alone would need far more than max_automaton_bytes.
    waste_test::SynthTokenizer t;
    ASSERT_NO_FATAL_FAILURE(waste_test::open_synth_tokenizer(t, 163840, 1));
    std::vector<int32_t> ids(1);
    std::string gbnf = "root ::= \"\"";
    int literals = 0;
    for (int32_t id = 0; id < 163840 && literals < 5000; id += 7) {
        char* bytes = nullptr;
        size_t length = 0;
        waste_error error{};
        if (waste_tokenizer_detokenize(t.tokenizer, &id, 1, 0, &bytes, &length, &error) != WASTE_OK) continue;
        const std::string text(bytes, length);
        waste_string_free(bytes);
        bool plain = text.size() >= 4;
        for (char c : text) plain = plain && c >= 'a' && c <= 'z';
        if (!plain) continue;
        gbnf += " | \"" + text + "\"";
        ++literals;
    }
    gbnf += "\n";
    ASSERT_EQ(literals, 5000);
    GrammarHandle handle;
    waste_error error{};
    ASSERT_EQ(compile(t.tokenizer, gbnf, handle, error), WASTE_OK) << error.message;
    waste_grammar_state* state = nullptr;
    ASSERT_EQ(waste_grammar_state_create(handle.grammar, nullptr, 0, &state, &error), WASTE_OK) << error.message;
    std::vector<float> logits(163840, 0.0f);
    EXPECT_EQ(waste_grammar_state_mask(state, logits.data(), logits.size(), nullptr, &error), WASTE_ERR_BUDGET);
    EXPECT_NE(std::string(error.message).find("automaton"), std::string::npos) << error.message;
    waste_grammar_state_free(state);
}

}  // namespace
