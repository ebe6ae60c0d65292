// invoke_calls.cpp — decoding an <invoke> call's body (invoke_calls.h).
#include "chat/replies/invoke_calls.h"

#include "chat/xtml_json.h"

namespace waste::chat::replies {

namespace {

// Reads `WORD="VALUE"` (after optional spaces) from the front of text.
std::optional<std::string_view> take_attribute(std::string_view& text, std::string_view word) {
    while (!text.empty() && all_space(text.substr(0, 1))) text.remove_prefix(1);
    if (text.substr(0, word.size()) != word || text.substr(word.size(), 2) != "=\"") return std::nullopt;
    text.remove_prefix(word.size() + 2);
    const size_t quote = text.find('"');
    if (quote == std::string_view::npos) return std::nullopt;
    const std::string_view value = text.substr(0, quote);
    text.remove_prefix(quote + 1);
    return value;
}

bool take(std::string_view& text, std::string_view prefix) {
    if (text.substr(0, prefix.size()) != prefix) return false;
    text.remove_prefix(prefix.size());
    return true;
}

Json typed_value(std::string_view value, std::optional<std::string_view> string_attribute) {
    if (string_attribute && *string_attribute == "true") return std::string(value);
    Json parsed;
    if (!parse_json_bounded(trim_space(value), parsed)) return std::string(value);
    if (!string_attribute && parsed.is_string()) return std::string(value);  // a bare string written with quotes
    return parsed;
}

}  // namespace

std::optional<DecodedCall> decode_invoke(std::string_view body, const InvokeSyntax& syntax, const ReplyMessage& message) {
    const auto name = take_attribute(body, "name");
    if (!name || !take(body, ">")) return std::nullopt;
    const std::string_view clean_name = trim_space(*name);
    if (clean_name.empty() || clean_name.find_first_of("\n<>") != std::string_view::npos) return std::nullopt;
    Json arguments = Json::object();
    while (!trim_space(body).empty()) {
        while (!body.empty() && all_space(body.substr(0, 1))) body.remove_prefix(1);
        if (!take(body, syntax.param_open)) return std::nullopt;
        const auto key = take_attribute(body, "name");
        if (!key) return std::nullopt;
        std::optional<std::string_view> string_attribute;
        if (syntax.string_attribute) {
            string_attribute = take_attribute(body, "string");
            if (!string_attribute || (*string_attribute != "true" && *string_attribute != "false")) return std::nullopt;
        }
        if (!take(body, ">")) return std::nullopt;
        const size_t end = body.find(syntax.param_close);
        if (end == std::string_view::npos) return std::nullopt;
        arguments[std::string(*key)] = typed_value(body.substr(0, end), string_attribute);
        body.remove_prefix(end + syntax.param_close.size());
    }
    return DecodedCall{std::string(clean_name), message.next_call_id(),
                       arguments.dump(-1, ' ', false, Json::error_handler_t::replace)};
}

ReplyFormat invoke_calls_format(std::string name, std::vector<std::string> markers, size_t required_markers,
                                InvokeSyntax syntax, std::vector<size_t> text_markers) {
    ReplyFormat format = marked_calls_format(std::move(name), std::move(markers), required_markers, [syntax](MarkedCallsSpec& spec) {
        sectioned_calls_roles(spec, false);
        spec.calls_in_section_only = true;
        spec.decode_body = [syntax](std::string_view body, const ReplyMessage& message) {
            return decode_invoke(body, syntax, message);
        };
    });
    format.text_markers = std::move(text_markers);
    return format;
}

}  // namespace waste::chat::replies
