// glm_calls.cpp — GLM-4.5/4.6's reply format:
//   <think> … </think>
//   <tool_call>NAME\n<arg_key>K</arg_key>\n<arg_value>V</arg_value>\n…</tool_call>
// The markers are added tokens of GLM's tokenizer, so they count by id; the
// argument markers inside a call reach the body as their text and are read
// when the call closes. A value is JSON if it parses, else the string (the
// template writes strings bare and everything else as JSON). A body without
// a name, or with an unpaired key or value, is text.
#include "chat/replies/marked_calls.h"

namespace waste::chat::replies {

namespace {

std::optional<DecodedCall> decode_glm_call(std::string_view body, const ReplyMessage& message) {
    const size_t first_key = body.find("<arg_key>");
    const std::string_view name = trim_space(body.substr(0, first_key));
    if (name.empty() || name.find('\n') != std::string_view::npos || name.find('<') != std::string_view::npos)
        return std::nullopt;
    Json arguments = Json::object();
    std::string_view rest = first_key == std::string_view::npos ? std::string_view() : body.substr(first_key);
    while (!trim_space(rest).empty()) {
        rest = trim_space(rest);
        if (rest.substr(0, 9) != "<arg_key>") return std::nullopt;
        const size_t key_end = rest.find("</arg_key>");
        if (key_end == std::string_view::npos) return std::nullopt;
        const std::string key(trim_space(rest.substr(9, key_end - 9)));
        rest = trim_space(rest.substr(key_end + 10));
        if (rest.substr(0, 11) != "<arg_value>") return std::nullopt;
        const size_t value_end = rest.find("</arg_value>");
        if (value_end == std::string_view::npos) return std::nullopt;
        const std::string value(rest.substr(11, value_end - 11));
        rest = rest.substr(value_end + 12);
        Json typed;
        if (parse_json_bounded(trim_space(value), typed)) arguments[key] = std::move(typed);
        else arguments[key] = value;
    }
    return DecodedCall{std::string(name), message.next_call_id(),
                       arguments.dump(-1, ' ', false, Json::error_handler_t::replace)};
}

}  // namespace

ReplyFormat glm_reply_format() {
    ReplyFormat format = marked_calls_format("glm",
                               {"<tool_call>", "</tool_call>", "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>",
                                "<think>", "</think>", "<|user|>", "<|observation|>"},
                               6, [](MarkedCallsSpec& spec) {
                                   spec.call_open = 0;
                                   spec.call_close = 1;
                                   spec.think_open = 6;
                                   spec.think_close = 7;
                                   spec.end_markers = {8, 9};
                                   spec.decode_body = decode_glm_call;
                               });
    using namespace call_parts;  // as GLM-4.6's template writes a call
    format.call_syntax = {{marker("<tool_call>"), name(), text("\n"),
                           each_argument({marker("<arg_key>"), key(), marker("</arg_key>"), text("\n"), marker("<arg_value>"), value(),
                                          marker("</arg_value>"), text("\n")}),
                           marker("</tool_call>")},
                          "</think>",
                          {"<tool_call>", "<think>"}};
    return format;
}

}  // namespace waste::chat::replies
