// xtml_family.cpp — K3's XTML reply parser (chat/xtml_reply.h, k3-chat.md
// §12) as one of the reply formats: its four markers by id, other specials
// written as their text (§12.1).
#include "chat/replies/family_parser.h"
#include "chat/xtml_render.h"

namespace waste::chat::replies {

namespace {

class XtmlParser final : public FamilyParser {
public:
    explicit XtmlParser(std::string_view channel) : parser_(channel) {}
    ReplyDelta push_marker(size_t marker) override {
        if (marker > static_cast<size_t>(Marker::end_of_msg)) return {};
        return parser_.push_marker(static_cast<Marker>(marker));
    }
    ReplyDelta push_text(std::string_view text) override { return parser_.push_text(text); }
    ReplyDelta finish() override { return parser_.finish(); }
    Json message_json() const override { return parser_.message_json(); }
    const std::vector<ReplyToolCall>& tool_calls() const override { return parser_.tool_calls(); }

private:
    ReplyParser parser_;
};

}  // namespace

ReplyFormat xtml_reply_format() {
    ReplyFormat format;
    format.name = "xtml";
    format.markers = {xtml_open, xtml_close, xtml_sep, xtml_end_of_msg};  // Marker's order
    format.required_markers = 4;
    format.specials_as_text = true;
    format.make = [](std::string_view channel) { return std::make_unique<XtmlParser>(channel); };
    return format;
}

}  // namespace waste::chat::replies
