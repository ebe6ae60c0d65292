// grammar_api.cpp — compiling grammars and stepping a grammar state, for the
// C API (include/waste/waste.h, "constrained decoding").
#include <fmt/format.h>

#include <memory>
#include <mutex>
#include <string>

#include "api/api_support.h"
#include "api/grammar_handle.h"
#include "api/tokenizer_handle.h"
#include "grammar/gbnf_parser.h"
#include "grammar/grammar_memory.h"
#include "grammar/json_schema.h"

using waste::api::guarded;

namespace {

constexpr size_t max_end_tokens = 1u << 16;  // a handful in practice: EOS and a chat format's end markers

std::string_view text_of(const char* text, size_t length, const char* what) {
    if (!text && length) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "{}: text is NULL with length {}", what, length);
    return text ? std::string_view(text, length) : std::string_view();
}

}  // namespace

namespace waste::api {

GrammarSlots::GrammarSlots(uint64_t planned)
    : compiled_bytes(planned == UINT64_MAX ? UINT64_MAX : planned * grammar::max_compiled_grammar_bytes),
      states(planned),
      planned(planned) {}

GrammarSlot::GrammarSlot(std::shared_ptr<GrammarSlots> slots, Kind kind, uint64_t amount, const char* caller)
    : slots_(std::move(slots)), kind_(kind), amount_(amount) {
    WASTE_CHECK(slots_ != nullptr);
    runtime::MemoryReserve& reserve = kind == Kind::compiled_bytes ? slots_->compiled_bytes : slots_->states;
    if (!reserve.try_take(amount))
        fail(WASTE_ERR_BUDGET,
             "{}: the memory plan reserves {} grammar slot{} (waste_open_options.grammars; `--grammars` on the command "
             "line), and {}; free a grammar or open the model with more",
             caller, slots_->planned, slots_->planned == 1 ? "" : "s",
             kind == Kind::compiled_bytes
                 ? fmt::format("the compiled grammars alive hold {} of their {} bytes, this one needs {}", reserve.used(),
                               reserve.capacity(), amount)
                 : fmt::format("{} grammar states are alive", reserve.used()));
}

GrammarSlot::~GrammarSlot() { (kind_ == Kind::compiled_bytes ? slots_->compiled_bytes : slots_->states).give_back(amount_); }

GrammarRun::GrammarRun(const waste_grammar& grammar, const char* caller)
    : slot(grammar.slot->slots(), GrammarSlot::Kind::state, 1, caller),
      masker(std::make_unique<grammar::TokenMasker>(grammar.grammar, grammar.trie, grammar.runs)) {}

}  // namespace waste::api

extern "C" {

waste_status waste_grammar_compile(const waste_tokenizer* tokenizer, uint32_t kind, const char* text, size_t length,
                                   waste_grammar** out_grammar, waste_error* error) {
    return guarded(error, [&] {
        if (!tokenizer || !out_grammar)
            waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_grammar_compile: tokenizer and out_grammar are required");
        *out_grammar = nullptr;
        std::string gbnf;
        switch (kind) {
            case WASTE_GRAMMAR_GBNF: gbnf = text_of(text, length, "waste_grammar_compile"); break;
            case WASTE_GRAMMAR_JSON_SCHEMA: gbnf = waste::grammar::json_schema_to_gbnf(text_of(text, length, "waste_grammar_compile")); break;
            case WASTE_GRAMMAR_JSON: gbnf = waste::grammar::any_json_gbnf(); break;
            default: waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_grammar_compile: kind {} is not a waste_grammar_kind", kind);
        }
        waste::api::GrammarSlots& slots = *tokenizer->grammar_slots;
        if (slots.planned == 0)
            waste::fail(WASTE_ERR_BUDGET,
                        "waste_grammar_compile: the model was opened with no grammar slots in its memory plan "
                        "(waste_open_options.grammars = 0; `--grammars` on the command line)");
        std::lock_guard compiling(slots.compile_mutex);
        auto handle = std::make_unique<waste_grammar>();
        handle->grammar = std::make_shared<const waste::grammar::Grammar>(waste::grammar::parse_gbnf(gbnf));
        const uint64_t rule_bytes = waste::grammar::grammar_rule_bytes(*handle->grammar);
        if (rule_bytes > waste::grammar::max_grammar_rule_bytes)
            waste::fail(WASTE_ERR_INVALID_ARGUMENT,
                        "grammar: its {} elements and {} rules take {} bytes, above the {} MiB a grammar slot plans for",
                        handle->grammar->elements.size(), handle->grammar->rule_names.size(), rule_bytes,
                        waste::grammar::max_grammar_rule_bytes >> 20);
        std::call_once(slots.trie_once, [&slots, tokenizer] {
            slots.trie = std::make_shared<const waste::grammar::VocabularyTrie>(
                waste::grammar::VocabularyTrie::from_tokenizer(*tokenizer->tokenizer));
        });
        handle->trie = slots.trie;
        handle->runs = std::make_shared<const waste::grammar::RunClasses>(*handle->grammar, *handle->trie);
        handle->slot = std::make_unique<waste::api::GrammarSlot>(tokenizer->grammar_slots, waste::api::GrammarSlot::Kind::compiled_bytes,
                                                                 rule_bytes + handle->runs->memory_bytes(), "waste_grammar_compile");
        *out_grammar = handle.release();
    });
}

void waste_grammar_free(waste_grammar* grammar) { delete grammar; }

waste_status waste_grammar_gbnf(const waste_grammar* grammar, char** out_gbnf, waste_error* error) {
    return guarded(error, [&] {
        if (!grammar || !out_gbnf) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_grammar_gbnf: grammar and out_gbnf are required");
        *out_gbnf = waste::api::to_c_string(waste::grammar::to_gbnf(*grammar->grammar));
    });
}

waste_status waste_json_schema_to_gbnf(const char* schema, size_t length, char** out_gbnf, waste_error* error) {
    return guarded(error, [&] {
        if (!out_gbnf) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_json_schema_to_gbnf: out_gbnf is required");
        *out_gbnf = nullptr;
        const std::string gbnf = waste::grammar::json_schema_to_gbnf(text_of(schema, length, "waste_json_schema_to_gbnf"));
        waste::grammar::parse_gbnf(gbnf);  // the translation must compile: check before handing it out
        *out_gbnf = waste::api::to_c_string(gbnf);
    });
}

waste_status waste_grammar_state_create(const waste_grammar* grammar, const int32_t* end_tokens, size_t end_token_count,
                                        waste_grammar_state** out_state, waste_error* error) {
    return guarded(error, [&] {
        if (!grammar || !out_state)
            waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_grammar_state_create: grammar and out_state are required");
        *out_state = nullptr;
        if (end_token_count > max_end_tokens || (end_token_count && !end_tokens))
            waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_grammar_state_create: {} end tokens (at most {})", end_token_count,
                        max_end_tokens);
        auto state = std::make_unique<waste_grammar_state>(*grammar, std::vector<int32_t>(end_tokens, end_tokens + end_token_count));
        *out_state = state.release();
    });
}

void waste_grammar_state_free(waste_grammar_state* state) { delete state; }

waste_status waste_grammar_state_mask(waste_grammar_state* state, float* logits, size_t vocab, size_t* out_allowed,
                                      waste_error* error) {
    return guarded(error, [&] {
        if (!state || !logits || vocab == 0)
            waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_grammar_state_mask: state and logits (vocab {} >= 1) are required", vocab);
        const size_t allowed = state->run.masker->mask_logits(std::span<float>(logits, vocab), state->end_tokens);
        if (out_allowed) *out_allowed = allowed;
    });
}

waste_status waste_grammar_state_accept(waste_grammar_state* state, int32_t token, waste_error* error) {
    return guarded(error, [&] {
        if (!state) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_grammar_state_accept: state is required");
        if (!state->run.masker->accept(token, state->end_tokens))
            waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_grammar_state_accept: token {} does not continue the grammar{}",
                        token, state->run.masker->ended() ? " (the output has ended)" : "");
    });
}

int waste_grammar_state_can_end(const waste_grammar_state* state) { return state && state->run.masker->can_end() ? 1 : 0; }

int waste_grammar_state_must_end(const waste_grammar_state* state) { return state && state->run.masker->must_end() ? 1 : 0; }

}  // extern "C"
