// deepseek_calls.cpp — DeepSeek-V3.1's reply format:
//   <think> … </think> (V3.1's tokenizer; V3's has no think tokens)
//   <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>ARGS<｜tool▁call▁end｜>…<｜tool▁calls▁end｜>
// All markers are added tokens, so they count by id. The name is the text
// before <｜tool▁sep｜>; from there the call stands, its arguments the raw
// text up to <｜tool▁call▁end｜> (or the end of output). A head with no
// name (or a call closed before its separator) is text. Ids: call_1, call_2…
// (the format carries none).
//
// DeepSeek-V3.2 writes calls as DSML text (<｜DSML｜function_calls>…): that
// is dsml_calls.cpp's format, which selection gives V3.2.
#include "chat/replies/marked_calls.h"

namespace waste::chat::replies {

ReplyFormat deepseek_reply_format() {
    ReplyFormat format = marked_calls_format(
        "deepseek",
        {"<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>", "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", "<｜tool▁sep｜>",
         "<｜end▁of▁sentence｜>", "<think>", "</think>"},
        5, [](MarkedCallsSpec& spec) {
            sectioned_calls_roles(spec);
            spec.decode_head = [](std::string_view head, const ReplyMessage& message) -> std::optional<DecodedCall> {
                head = trim_space(head);
                if (head.empty()) return std::nullopt;
                return DecodedCall{std::string(head), message.next_call_id(), {}};
            };
        });
    using namespace call_parts;  // as V3.1's template writes a call
    format.call_syntax = {{marker("<｜tool▁calls▁begin｜>"), marker("<｜tool▁call▁begin｜>"), name(), marker("<｜tool▁sep｜>"), arguments(),
                           marker("<｜tool▁call▁end｜>"), marker("<｜tool▁calls▁end｜>")},
                          "</think>",
                          {"<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>", "<think>"}};
    return format;
}

}  // namespace waste::chat::replies
