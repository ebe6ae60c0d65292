// chat_format.h — which prompt format a model speaks: K3's XTML when its
// tokenizer has the four markers as single special tokens (k3-chat.md §1),
// else its chat.json, else none (raw prompts only).
//
// Deliberately not here: reading the container's files (the C API caches
// one ChatFormat per model), rendering (xtml_render.h, chat_json_render.h).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "chat/jinja_render.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace waste::chat {

struct ChatFormat {
    std::shared_ptr<const text::Tokenizer> tokenizer;
    bool xtml = false;
    // <|open|>, <|close|>, <|sep|>, <|end_of_msg|> (XTML only; else -1)
    std::array<int32_t, 4> marker_ids{-1, -1, -1, -1};
    // The container's chat_template.jinja with tokenizer_config.json's
    // bos/eos (chat_tokens.json); used when the model does not speak XTML.
    std::optional<JinjaFormat> jinja;
    std::string jinja_error;  // why a container's chat_template.jinja could not be read
    std::optional<text::ChatTemplate> chat_template;
    std::string no_template_reason;  // why there is no chat.json path, when chat_template is empty
};

// Whether each of the four markers encodes, in markup mode, to exactly one
// special id; fills marker_ids.
bool speaks_xtml(const text::Tokenizer& tokenizer, std::array<int32_t, 4>& marker_ids);

}  // namespace waste::chat
