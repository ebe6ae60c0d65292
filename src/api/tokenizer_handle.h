// tokenizer_handle.h — the struct behind the opaque waste_tokenizer handle,
// shared by the C API files (tokenizer_api.cpp, generate_api.cpp, chat_api.cpp).
#pragma once

#include <memory>

#include "text/tokenizer.h"

struct waste_tokenizer {
    std::shared_ptr<const waste::text::Tokenizer> tokenizer;
};
