// tokenizer_handle.h — the struct behind the opaque waste_tokenizer handle,
// shared by the C API files (tokenizer_api.cpp, generate_api.cpp, chat_api.cpp).
#pragma once

#include <memory>

#include "api/grammar_slots.h"
#include "text/tokenizer.h"

struct waste_tokenizer {
    std::shared_ptr<const waste::text::Tokenizer> tokenizer;
    // The model's grammar reserve and vocabulary trie (grammar_slots.h);
    // never null.
    std::shared_ptr<waste::api::GrammarSlots> grammar_slots;
};
