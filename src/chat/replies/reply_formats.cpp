// reply_formats.cpp — the format table and selection (see reply_formats.h).
#include "chat/replies/reply_formats.h"

#include <algorithm>
#include <array>

#include "chat/chat_format.h"

namespace waste::chat::replies {

namespace {

const std::vector<ReplyFormat>& formats() {
    static const std::vector<ReplyFormat> all = {xtml_reply_format(),   harmony_reply_format(), deepseek_reply_format(),
                                                 kimi_k2_reply_format(), glm_reply_format(),     hermes_reply_format(),
                                                 reasoning_reply_format(), content_reply_format(),
                                                 // appended, so that fuzz seeds keep their format byte
                                                 dsml_reply_format(),     minimax_reply_format()};
    return all;
}

bool usable(std::string_view name, const text::Tokenizer& tokenizer) {
    const ReplyFormat* format = find_reply_format(name);
    return format && missing_marker(*format, tokenizer).empty();
}

}  // namespace

const ReplyFormat* find_reply_format(std::string_view name) {
    for (const ReplyFormat& format : formats())
        if (format.name == name) return &format;
    return nullptr;
}

std::vector<std::string> reply_format_names() {
    std::vector<std::string> names;
    for (const ReplyFormat& format : formats()) names.push_back(format.name);
    return names;
}

std::string missing_marker(const ReplyFormat& format, const text::Tokenizer& tokenizer, bool text_allowed) {
    for (size_t i = 0; i < format.required_markers && i < format.markers.size(); ++i) {
        if (tokenizer.special_id(format.markers[i])) continue;
        if (text_allowed && std::find(format.text_markers.begin(), format.text_markers.end(), i) != format.text_markers.end())
            continue;
        return format.markers[i];
    }
    return {};
}

namespace {

Json parts_json(const std::vector<CallPart>& parts) {
    static const char* const kinds[] = {"marker", "text", "name", "arguments", "each_argument", "key", "value"};
    Json out = Json::array();
    for (const CallPart& part : parts) {
        Json one = {{"kind", kinds[static_cast<int>(part.kind)]}};
        if (part.kind == CallPart::Kind::marker || part.kind == CallPart::Kind::text) one["text"] = part.text;
        if (part.kind == CallPart::Kind::each_argument) one["argument"] = parts_json(part.argument);
        out.push_back(std::move(one));
    }
    return out;
}

}  // namespace

Json call_syntax_json(const ReplyFormat& format) {
    const CallSyntax& syntax = format.call_syntax;
    if (syntax.call.empty()) return nullptr;
    return {{"call", parts_json(syntax.call)}, {"think_close", syntax.think_close}, {"think_masked", syntax.think_masked}};
}

std::string select_reply_format(const text::Tokenizer& tokenizer, std::string_view chat_template) {
    std::array<int32_t, 4> xtml_ids{};
    if (speaks_xtml(tokenizer, xtml_ids)) return "xtml";
    if (usable("harmony", tokenizer)) return "harmony";
    if (usable("deepseek", tokenizer)) {
        return chat_template.find("DSML") == std::string_view::npos ? "deepseek" : "dsml";
    }
    for (const char* name : {"kimi-k2", "glm", "minimax", "hermes", "reasoning"})
        if (usable(name, tokenizer)) return name;
    return "content";
}

}  // namespace waste::chat::replies
