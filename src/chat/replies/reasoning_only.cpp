// reasoning_only.cpp — the formats without tool calls the engine can read:
// "reasoning" (<think> … </think>; by id where the tokenizer has them as
// single tokens, else from text) and "content"
// (every token is content, as for a chat.json model).
#include "chat/replies/marked_calls.h"

namespace waste::chat::replies {

namespace {

class ContentParser final : public FamilyParser {
public:
    ReplyDelta push_marker(size_t) override { return {}; }
    ReplyDelta push_text(std::string_view text) override {
        ReplyDelta delta;
        if (!ended_) message_.add_content(text, delta);
        return delta;
    }
    ReplyDelta finish() override {
        ended_ = true;
        return {};
    }
    Json message_json() const override { return message_.message_json(); }
    const std::vector<ReplyToolCall>& tool_calls() const override { return message_.tool_calls(); }

private:
    ReplyMessage message_;
    bool ended_ = false;
};

}  // namespace

ReplyFormat reasoning_reply_format() {
    ReplyFormat format = marked_calls_format("reasoning", {"<think>", "</think>"}, 2, [](MarkedCallsSpec& spec) {
        spec.think_open = 0;
        spec.think_close = 1;
    });
    // A model whose vocabulary spells <think> with ordinary tokens writes it
    // as text: read it there (only when named; selection wants the tokens).
    format.text_markers = {0, 1};
    return format;
}

ReplyFormat content_reply_format() {
    ReplyFormat format;
    format.name = "content";
    format.make = [](std::string_view) { return std::make_unique<ContentParser>(); };
    return format;
}

}  // namespace waste::chat::replies
