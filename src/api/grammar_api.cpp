// grammar_api.cpp — compiling grammars and stepping a grammar state, for the
// C API (include/waste/waste.h, "constrained decoding").
#include <memory>
#include <mutex>
#include <string>

#include "api/api_support.h"
#include "api/grammar_handle.h"
#include "api/tokenizer_handle.h"
#include "grammar/gbnf_parser.h"
#include "grammar/json_schema.h"

using waste::api::guarded;

namespace {

constexpr size_t max_end_tokens = 1u << 16;  // a handful in practice: EOS and a chat format's end markers

std::string_view text_of(const char* text, size_t length, const char* what) {
    if (!text && length) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "{}: text is NULL with length {}", what, length);
    return text ? std::string_view(text, length) : std::string_view();
}

}  // namespace

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
        auto handle = std::make_unique<waste_grammar>();
        handle->grammar = std::make_shared<const waste::grammar::Grammar>(waste::grammar::parse_gbnf(gbnf));
        std::call_once(tokenizer->trie_once, [tokenizer] {
            tokenizer->trie = std::make_shared<const waste::grammar::VocabularyTrie>(
                waste::grammar::VocabularyTrie::from_tokenizer(*tokenizer->tokenizer));
        });
        handle->trie = tokenizer->trie;
        handle->runs = std::make_shared<const waste::grammar::RunClasses>(*handle->grammar, *handle->trie);
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
        auto state = std::make_unique<waste_grammar_state>();
        state->grammar = grammar->grammar;
        state->end_tokens.assign(end_tokens, end_tokens + end_token_count);
        state->masker = std::make_unique<waste::grammar::TokenMasker>(grammar->grammar, grammar->trie, grammar->runs);
        *out_state = state.release();
    });
}

void waste_grammar_state_free(waste_grammar_state* state) { delete state; }

waste_status waste_grammar_state_mask(waste_grammar_state* state, float* logits, size_t vocab, size_t* out_allowed,
                                      waste_error* error) {
    return guarded(error, [&] {
        if (!state || !logits || vocab == 0)
            waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_grammar_state_mask: state and logits (vocab {} >= 1) are required", vocab);
        const size_t allowed = state->masker->mask_logits(std::span<float>(logits, vocab), state->end_tokens);
        if (out_allowed) *out_allowed = allowed;
    });
}

waste_status waste_grammar_state_accept(waste_grammar_state* state, int32_t token, waste_error* error) {
    return guarded(error, [&] {
        if (!state) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_grammar_state_accept: state is required");
        if (!state->masker->accept(token, state->end_tokens))
            waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_grammar_state_accept: token {} does not continue the grammar{}",
                        token, state->masker->ended() ? " (the output has ended)" : "");
    });
}

int waste_grammar_state_can_end(const waste_grammar_state* state) { return state && state->masker->can_end() ? 1 : 0; }

int waste_grammar_state_must_end(const waste_grammar_state* state) { return state && state->masker->must_end() ? 1 : 0; }

}  // extern "C"
