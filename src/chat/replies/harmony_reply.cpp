// harmony_reply.cpp — gpt-oss's harmony reply format. The generation prompt
// ends in "<|start|>assistant", so a reply opens with a message header:
//   <|channel|>analysis<|message|>…<|end|>                  reasoning
//   <|channel|>final<|message|>…<|return|>                  content
//   <|channel|>commentary to=functions.NAME <|constrain|>json<|message|>ARGS<|call|>   a call
//   to=functions.NAME<|channel|>commentary json<|message|>ARGS<|call|>                (the same)
// and further messages follow as <|start|>assistant<header><|message|>….
// Every marker is a special of o200k_harmony, so they count by id; the
// header between them (role, channel name, "to=" recipient, content type)
// is text, read when <|message|> completes it.
//
// A header with a recipient is a call (name: the recipient less
// "functions."), announced at <|message|>; its arguments are the raw body
// up to <|call|>, <|end|> or the end of output. analysis is reasoning; any
// other channel (final, commentary preambles, none) is content. <|call|> and
// <|return|> end the message. A <|start|> or <|channel|> inside a body ends
// that message (the model skipped <|end|>). A header the output ends in, or
// one longer than max_header_bytes, is content, markers written as text.
#include "chat/replies/family_parser.h"
#include "chat/replies/reply_message.h"

namespace waste::chat::replies {

namespace {

enum HarmonyMarker : size_t { start, channel, message, end, call, return_, constrain };

// The word after `key` in a header, up to a space or a marker's '<'.
std::string word_after(std::string_view header, std::string_view key) {
    const size_t at = header.find(key);
    if (at == std::string_view::npos) return {};
    std::string_view rest = header.substr(at + key.size());
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    size_t n = 0;
    while (n < rest.size() && rest[n] != ' ' && rest[n] != '<' && rest[n] != '\n' && rest[n] != '\t') ++n;
    return std::string(rest.substr(0, n));
}

class HarmonyParser final : public FamilyParser {
public:
    HarmonyParser(std::vector<std::string> markers, std::string_view channel_name) : markers_(std::move(markers)) {
        if (channel_name == "think") {
            where_ = Where::body;
            body_ = Body::reasoning;
        }
    }

    ReplyDelta push_marker(size_t marker) override {
        ReplyDelta delta;
        if (message_.finished || ended_ || marker >= markers_.size()) return delta;
        switch (marker) {
            case start:
            case channel:
                if (where_ == Where::header && marker == channel) {
                    add_header(markers_[marker], delta);
                    break;
                }
                if (where_ == Where::header) header_as_text(delta);
                end_body(delta);
                where_ = Where::header;
                header_ = marker == channel ? markers_[marker] : std::string();
                break;
            case message:
                if (where_ == Where::header) open_body(delta);
                else text(markers_[marker], delta);
                break;
            case end:
            case call:
            case return_:
                if (where_ == Where::header) header_as_text(delta);
                end_body(delta);
                where_ = Where::between;
                if (marker != end) message_.finished = true;
                break;
            default:  // <|constrain|>: part of a header, else text
                if (where_ == Where::header) add_header(markers_[marker], delta);
                else text(markers_[marker], delta);
                break;
        }
        return delta;
    }

    ReplyDelta push_text(std::string_view piece) override {
        ReplyDelta delta;
        if (message_.finished || ended_ || piece.empty()) return delta;
        if (where_ == Where::header) add_header(piece, delta);
        else text(piece, delta);
        return delta;
    }

    ReplyDelta finish() override {
        ReplyDelta delta;
        if (ended_) return delta;
        if (!message_.finished) {
            if (where_ == Where::header) header_as_text(delta);
            end_body(delta);
        }
        ended_ = true;
        return delta;
    }

    Json message_json() const override { return message_.message_json(); }
    const std::vector<ReplyToolCall>& tool_calls() const override { return message_.tool_calls(); }

private:
    enum class Where { header, body, between };
    enum class Body { reasoning, content, call };

    void add_header(std::string_view piece, ReplyDelta& delta) {
        header_ += piece;
        if (header_.size() > max_header_bytes) {
            // No header is this long: it was not markup after all.
            header_as_text(delta);
            where_ = Where::body;
            body_ = Body::content;
        }
    }

    void header_as_text(ReplyDelta& delta) {
        if (!header_.empty()) message_.add_content(header_, delta);
        header_.clear();
        where_ = Where::between;
    }

    void open_body(ReplyDelta& delta) {
        std::string recipient = word_after(header_, "to=");
        const std::string channel_name = word_after(header_, markers_[channel]);
        header_.clear();
        where_ = Where::body;
        arguments_.clear();
        if (!recipient.empty() && recipient != "assistant") {
            std::string name = recipient.substr(0, 10) == "functions." ? recipient.substr(10) : recipient;
            if (!name.empty() && message_.open_call(std::move(name), message_.next_call_id(), delta)) {
                body_ = Body::call;
                return;
            }
        }
        body_ = channel_name == "analysis" ? Body::reasoning : Body::content;
    }

    void end_body(ReplyDelta& delta) {
        if (where_ == Where::body && body_ == Body::call) message_.set_arguments(std::string(trim_space(arguments_)), delta);
        arguments_.clear();
        if (where_ == Where::body) where_ = Where::between;
    }

    void text(std::string_view piece, ReplyDelta& delta) {
        if (where_ == Where::between) {
            if (!all_space(piece)) message_.add_content(piece, delta);
            return;
        }
        switch (body_) {
            case Body::reasoning: message_.add_reasoning(piece, delta); break;
            case Body::content: message_.add_content(piece, delta); break;
            case Body::call:
                // the arguments keep what fits
                if (arguments_.size() + piece.size() <= max_call_bytes) arguments_ += piece;
                break;
        }
    }

    std::vector<std::string> markers_;
    ReplyMessage message_;
    Where where_ = Where::header;
    Body body_ = Body::content;
    std::string header_, arguments_;
    bool ended_ = false;
};

}  // namespace

ReplyFormat harmony_reply_format() {
    ReplyFormat format;
    format.name = "harmony";
    format.markers = {"<|start|>", "<|channel|>", "<|message|>", "<|end|>", "<|call|>", "<|return|>", "<|constrain|>"};
    format.required_markers = 6;
    format.make = [markers = format.markers](std::string_view channel_name) {
        return std::make_unique<HarmonyParser>(markers, channel_name);
    };
    // As gpt-oss's template writes a call, after the generation prompt's
    // "<|start|>assistant" (no analysis message first: the reply is the call).
    using namespace call_parts;
    format.call_syntax.call = {text(" to=functions."), name(),      marker("<|channel|>"), text("commentary json"),
                               marker("<|message|>"),  arguments(), marker("<|call|>")};
    return format;
}

}  // namespace waste::chat::replies
