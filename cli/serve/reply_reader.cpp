#include "reply_reader.h"

#include <stdexcept>

namespace waste_serve {

namespace {

using nlohmann::json;

// Plain text: every token is content (a partial UTF-8 character is held
// until complete by the detokenizer).
class TextReader final : public ReplyReader {
public:
    explicit TextReader(const waste_tokenizer* tokenizer) {
        waste_error error{};
        if (waste_detokenizer_create(tokenizer, 0, &detokenizer_, &error) != WASTE_OK)
            throw std::runtime_error(error.message);
    }
    ~TextReader() override { waste_detokenizer_free(detokenizer_); }
    ReplyDelta push(int32_t token) override {
        const char* bytes = nullptr;
        size_t length = 0;
        waste_error error{};
        if (waste_detokenizer_push(detokenizer_, token, &bytes, &length, &error) != WASTE_OK)
            throw std::runtime_error(error.message);
        return add(bytes, length);
    }
    ReplyDelta finish() override {
        const char* bytes = nullptr;
        size_t length = 0;
        waste_error error{};
        if (waste_detokenizer_finish(detokenizer_, &bytes, &length, &error) != WASTE_OK)
            throw std::runtime_error(error.message);
        return add(bytes, length);
    }
    json message() const override {
        return {{"role", "assistant"}, {"content", text_.empty() ? json(nullptr) : json(text_)}};
    }

private:
    ReplyDelta add(const char* bytes, size_t length) {
        ReplyDelta delta;
        if (length) delta.content.assign(bytes, length);
        text_ += delta.content;
        return delta;
    }
    waste_detokenizer* detokenizer_ = nullptr;
    std::string text_;
};

ReplyDelta to_delta(const char* delta_json) {
    ReplyDelta delta;
    if (!delta_json) return delta;
    const json d = json::parse(delta_json);
    if (auto it = d.find("reasoning_content"); it != d.end() && it->is_string()) delta.reasoning = it->get<std::string>();
    if (auto it = d.find("content"); it != d.end() && it->is_string()) delta.content = it->get<std::string>();
    if (auto it = d.find("tool_calls"); it != d.end() && it->is_array()) delta.tool_calls = *it;
    return delta;
}

class ChatReader final : public ReplyReader {
public:
    ChatReader(const waste_model* model, const std::string& channel) {
        waste_error error{};
        if (waste_reply_parser_create(model, channel.empty() ? nullptr : channel.c_str(), &parser_, &error) != WASTE_OK)
            throw std::runtime_error(error.message);
    }
    ~ChatReader() override { waste_reply_parser_free(parser_); }
    ReplyDelta push(int32_t token) override {
        const char* delta = nullptr;
        waste_error error{};
        if (waste_reply_parser_push(parser_, token, &delta, &error) != WASTE_OK) throw std::runtime_error(error.message);
        return to_delta(delta);
    }
    ReplyDelta finish() override {
        const char* delta = nullptr;
        waste_error error{};
        if (waste_reply_parser_finish(parser_, &delta, &error) != WASTE_OK) throw std::runtime_error(error.message);
        return to_delta(delta);
    }
    json message() const override {
        char* text = nullptr;
        waste_error error{};
        if (waste_reply_parser_message_json(parser_, &text, &error) != WASTE_OK) throw std::runtime_error(error.message);
        json m = json::parse(text);
        waste_string_free(text);
        m.erase("finished");
        return m;
    }

private:
    waste_reply_parser* parser_ = nullptr;
};

}  // namespace

std::unique_ptr<ReplyReader> make_text_reader(const waste_tokenizer* tokenizer) {
    return std::make_unique<TextReader>(tokenizer);
}

std::unique_ptr<ReplyReader> make_chat_reader(const waste_model* model, const std::string& channel) {
    return std::make_unique<ChatReader>(model, channel);
}

}  // namespace waste_serve
