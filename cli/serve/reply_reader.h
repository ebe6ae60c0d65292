// reply_reader.h — generated token ids to what the client sees. Chat
// requests read replies with the library's reply parser (k3-chat.md §12:
// reasoning_content, content, tool_calls, by token id); a raw completion is
// plain text through the streaming detokenizer.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "waste/waste.h"

namespace waste_serve {

struct ReplyDelta {
    std::string reasoning;
    std::string content;
    nlohmann::json tool_calls = nlohmann::json::array();  // [{"index", "id", "name"}] opened or touched
};

class ReplyReader {
public:
    virtual ~ReplyReader() = default;
    virtual ReplyDelta push(int32_t token) = 0;
    virtual ReplyDelta finish() = 0;
    // §12.6's message: {"role", "content", "reasoning_content"?, "tool_calls"?}.
    virtual nlohmann::json message() const = 0;
};

// Throw std::runtime_error with the library's message on failure.
std::unique_ptr<ReplyReader> make_text_reader(const waste_tokenizer* tokenizer);
// channel: "think", "response" or empty (nullptr to the parser).
std::unique_ptr<ReplyReader> make_chat_reader(const waste_model* model, const std::string& channel);

}  // namespace waste_serve
