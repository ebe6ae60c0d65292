// tokenizer_handle.h — the struct behind the opaque waste_tokenizer handle,
// shared by the C API files (tokenizer_api.cpp, generate_api.cpp, chat_api.cpp).
#pragma once

#include <memory>
#include <mutex>

#include "text/tokenizer.h"

namespace waste::grammar {
class VocabularyTrie;  // grammar/token_mask.h
}  // namespace waste::grammar

struct waste_tokenizer {
    std::shared_ptr<const waste::text::Tokenizer> tokenizer;
    // The vocabulary's byte trie, built by the first waste_grammar_compile
    // against this handle and shared by every grammar compiled after it
    // (each holds a reference): at K3's 163,840 ids it is megabytes, and
    // building it is most of a compile. Immutable once built.
    mutable std::once_flag trie_once;
    mutable std::shared_ptr<const waste::grammar::VocabularyTrie> trie;
};
