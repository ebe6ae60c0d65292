// kimi_k2_calls.cpp — Kimi K2's reply format (K2 and K2-Thinking):
//   <think> … </think> (K2-Thinking)
//   <|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:IDX<|tool_call_argument_begin|>ARGS<|tool_call_end|>…<|tool_calls_section_end|>
// All markers are specials of K2's tokenizer, so they count by id. The
// head is the call's id as K2 writes it ("functions.NAME:IDX", kept whole
// as the OpenAI id); the name is what lies between "functions." (optional)
// and the last ':'. From <|tool_call_argument_begin|> the call stands, its
// arguments the raw text up to <|tool_call_end|> or the end of output.
#include "chat/replies/marked_calls.h"

namespace waste::chat::replies {

ReplyFormat kimi_k2_reply_format() {
    ReplyFormat format = marked_calls_format(
        "kimi-k2",
        {"<|tool_calls_section_begin|>", "<|tool_calls_section_end|>", "<|tool_call_begin|>", "<|tool_call_end|>",
         "<|tool_call_argument_begin|>", "<|im_end|>", "<think>", "</think>"},
        5, [](MarkedCallsSpec& spec) {
            sectioned_calls_roles(spec);
            spec.decode_head = [](std::string_view head, const ReplyMessage&) -> std::optional<DecodedCall> {
                head = trim_space(head);
                std::string_view name = head;
                if (name.substr(0, 10) == "functions.") name.remove_prefix(10);
                if (const size_t colon = name.rfind(':'); colon != std::string_view::npos) name = name.substr(0, colon);
                if (name.empty()) return std::nullopt;
                return DecodedCall{std::string(name), std::string(head), {}};
            };
        });
    using namespace call_parts;  // as K2's template writes the first call of a message
    format.call_syntax = {{marker("<|tool_calls_section_begin|>"), marker("<|tool_call_begin|>"), text("functions."), name(), text(":0"),
                           marker("<|tool_call_argument_begin|>"), arguments(), marker("<|tool_call_end|>"),
                           marker("<|tool_calls_section_end|>")},
                          "</think>",
                          {"<|tool_calls_section_begin|>", "<|tool_call_begin|>", "<think>"}};
    return format;
}

}  // namespace waste::chat::replies
