// grammar_handle.h — the structs behind the opaque waste_grammar and
// waste_grammar_state handles, shared by grammar_api.cpp and
// generate_api.cpp.
#pragma once

#include <memory>
#include <vector>

#include "grammar/token_mask.h"

struct waste_grammar {
    std::shared_ptr<const waste::grammar::Grammar> grammar;
    std::shared_ptr<const waste::grammar::VocabularyTrie> trie;
    std::shared_ptr<const waste::grammar::RunClasses> runs;  // the vocabulary's run classes for this grammar
};

struct waste_grammar_state {
    std::shared_ptr<const waste::grammar::Grammar> grammar;  // kept alive for the masker
    std::vector<int32_t> end_tokens;
    std::unique_ptr<waste::grammar::TokenMasker> masker;
};
