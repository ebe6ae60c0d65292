// hermes_calls.cpp — Qwen3's reply format (Hermes tool calls): reasoning in
// <think> … </think>, each call as
//   <tool_call>\n{"name": NAME, "arguments": {...}}\n</tool_call>
// or, as Qwen3-Coder writes it (same markers, XML inside),
//   <tool_call>\n<function=NAME>\n<parameter=P>\nVALUE\n</parameter>\n</function>\n</tool_call>
// <tool_call> and <think> are added tokens in Qwen3's tokenizer.json
// ("special": false, but single ids), so they count by id; <function= and
// <parameter= are ordinary text, read from the complete body.
//
// A body decodes when it is a JSON object with a string "name" (arguments:
// "arguments" or "parameters", a string kept as it is, anything else as
// its JSON text, absent as "{}"), or the XML form with a function name
// (each parameter's value: JSON if it parses, else the string — the
// declared schema is not known here). Anything else is text.
#include <optional>

#include "chat/replies/marked_calls.h"

namespace waste::chat::replies {

namespace {

std::optional<DecodedCall> decode_json_call(std::string_view body, const ReplyMessage& message) {
    Json parsed;
    if (!parse_json_bounded(body, parsed) || !parsed.is_object()) return std::nullopt;
    const auto name = parsed.find("name");
    if (name == parsed.end() || !name->is_string()) return std::nullopt;
    DecodedCall call{name->get<std::string>(), message.next_call_id(), "{}"};
    auto arguments = parsed.find("arguments");
    if (arguments == parsed.end()) arguments = parsed.find("parameters");
    if (arguments != parsed.end()) {
        call.arguments = arguments->is_string() ? arguments->get<std::string>()
                                                : arguments->dump(-1, ' ', false, Json::error_handler_t::replace);
    }
    return call;
}

// The text between open and close (e.g. "<parameter=" … ">"), advancing at.
std::optional<std::string_view> between(std::string_view text, size_t& at, std::string_view open, std::string_view close) {
    const size_t start = text.find(open, at);
    if (start == std::string_view::npos) return std::nullopt;
    const size_t end = text.find(close, start + open.size());
    if (end == std::string_view::npos) return std::nullopt;
    at = end + close.size();
    return text.substr(start + open.size(), end - start - open.size());
}

std::string strip_one_newline(std::string_view value) {
    if (!value.empty() && value.front() == '\n') value.remove_prefix(1);
    if (!value.empty() && value.back() == '\n') value.remove_suffix(1);
    return std::string(value);
}

std::optional<DecodedCall> decode_xml_call(std::string_view body, const ReplyMessage& message) {
    if (body.substr(0, 10) != "<function=") return std::nullopt;
    size_t at = 0;
    const auto name = between(body, at, "<function=", ">");
    if (!name || trim_space(*name).empty()) return std::nullopt;
    const size_t function_end = body.rfind("</function>");
    if (function_end == std::string_view::npos || function_end < at) return std::nullopt;
    const std::string_view inside = body.substr(at, function_end - at);
    Json arguments = Json::object();
    size_t p = 0;
    while (true) {
        const auto key = between(inside, p, "<parameter=", ">");
        if (!key) break;
        const size_t end = inside.find("</parameter>", p);
        if (end == std::string_view::npos) return std::nullopt;
        const std::string value = strip_one_newline(inside.substr(p, end - p));
        p = end + 12;
        Json typed;
        if (parse_json_bounded(trim_space(value), typed)) arguments[std::string(trim_space(*key))] = std::move(typed);
        else arguments[std::string(trim_space(*key))] = value;
    }
    if (!all_space(inside.substr(std::min(p, inside.size())))) return std::nullopt;
    return DecodedCall{std::string(trim_space(*name)), message.next_call_id(),
                       arguments.dump(-1, ' ', false, Json::error_handler_t::replace)};
}

}  // namespace

ReplyFormat hermes_reply_format() {
    ReplyFormat format = marked_calls_format("hermes", {"<tool_call>", "</tool_call>", "<think>", "</think>", "<|im_end|>"}, 2,
                               [](MarkedCallsSpec& spec) {
                                   spec.call_open = 0;
                                   spec.call_close = 1;
                                   spec.think_open = 2;
                                   spec.think_close = 3;
                                   spec.end_markers = {4};
                                   spec.decode_body = [](std::string_view body, const ReplyMessage& message) {
                                       body = trim_space(body);
                                       if (auto call = decode_json_call(body, message)) return call;
                                       return decode_xml_call(body, message);
                                   };
                               });
    using namespace call_parts;  // as Qwen3's template writes a call
    format.call_syntax = {{marker("<tool_call>"), text("\n{\"name\": \""), name(), text("\", \"arguments\": "), arguments(),
                           text("}\n"), marker("</tool_call>")},
                          "</think>",
                          {"<tool_call>", "<think>"}};
    return format;
}

}  // namespace waste::chat::replies
