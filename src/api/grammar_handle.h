// grammar_handle.h — the structs behind the opaque waste_grammar and
// waste_grammar_state handles, shared by grammar_api.cpp and
// generate_api.cpp.
#pragma once

#include <memory>
#include <vector>

#include "api/grammar_slots.h"
#include "grammar/token_mask.h"

namespace waste::api {

// A share of the plan's grammar reserve, held while the thing it pays for
// lives: a compiled grammar's bytes, or a generation's state slot. Taking
// one beyond the plan is WASTE_ERR_BUDGET naming waste_open_options.grammars.
class GrammarSlot {
public:
    enum class Kind { compiled_bytes, state };
    GrammarSlot(std::shared_ptr<GrammarSlots> slots, Kind kind, uint64_t amount, const char* caller);
    ~GrammarSlot();
    GrammarSlot(const GrammarSlot&) = delete;
    GrammarSlot& operator=(const GrammarSlot&) = delete;
    const std::shared_ptr<GrammarSlots>& slots() const { return slots_; }

private:
    std::shared_ptr<GrammarSlots> slots_;
    Kind kind_;
    uint64_t amount_;
};

// A generation's grammar state and the slot it holds.
struct GrammarRun {
    GrammarRun(const waste_grammar& grammar, const char* caller);
    GrammarSlot slot;
    std::unique_ptr<grammar::TokenMasker> masker;
};

}  // namespace waste::api

struct waste_grammar {
    std::unique_ptr<waste::api::GrammarSlot> slot;  // its bytes of the reserve
    std::shared_ptr<const waste::grammar::Grammar> grammar;
    std::shared_ptr<const waste::grammar::VocabularyTrie> trie;
    std::shared_ptr<const waste::grammar::RunClasses> runs;  // the vocabulary's run classes for this grammar
};

struct waste_grammar_state {
    waste_grammar_state(const waste_grammar& grammar, std::vector<int32_t> end_tokens)
        : grammar(grammar.grammar), end_tokens(std::move(end_tokens)), run(grammar, "waste_grammar_state_create") {}
    std::shared_ptr<const waste::grammar::Grammar> grammar;  // kept alive for the masker
    std::vector<int32_t> end_tokens;
    waste::api::GrammarRun run;
};
