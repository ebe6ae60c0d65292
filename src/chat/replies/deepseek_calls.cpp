// deepseek_calls.cpp — DeepSeek-V3.1's reply format:
//   <think> … </think> (V3.1's tokenizer; V3's has no think tokens)
//   <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>ARGS<｜tool▁call▁end｜>…<｜tool▁calls▁end｜>
// All markers are added tokens, so they count by id. The name is the text
// before <｜tool▁sep｜>; from there the call stands, its arguments the raw
// text up to <｜tool▁call▁end｜> (or the end of output). A head with no
// name (or a call closed before its separator) is text. Ids: call_1, call_2…
// (the format carries none).
//
// DeepSeek-V3.2 writes calls as DSML text (<｜DSML｜function_calls>…); that
// is not read here: selection gives V3.2 the reasoning-only format.
#include "chat/replies/marked_calls.h"

namespace waste::chat::replies {

ReplyFormat deepseek_reply_format() {
    ReplyFormat format;
    format.name = "deepseek";
    format.markers = {"<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>", "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>",
                      "<｜tool▁sep｜>",        "<｜end▁of▁sentence｜>", "<think>",              "</think>"};
    format.required_markers = 5;
    format.make = [markers = format.markers](std::string_view channel) {
        MarkedCallsSpec spec;
        spec.markers = markers;
        spec.section_open = 0;
        spec.section_close = 1;
        spec.call_open = 2;
        spec.call_close = 3;
        spec.call_sep = 4;
        spec.end_markers = {5};
        spec.think_open = 6;
        spec.think_close = 7;
        spec.decode_head = [](std::string_view head, const ReplyMessage& message) -> std::optional<DecodedCall> {
            head = trim_space(head);
            if (head.empty()) return std::nullopt;
            return DecodedCall{std::string(head), message.next_call_id(), {}};
        };
        return std::make_unique<MarkedCallsParser>(std::move(spec), channel);
    };
    return format;
}

}  // namespace waste::chat::replies
