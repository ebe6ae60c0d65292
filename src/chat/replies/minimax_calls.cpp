// minimax_calls.cpp — MiniMax-M2's reply format:
//   <think> … </think>
//   <minimax:tool_call>
//   <invoke name="NAME">
//   <parameter name="P">VALUE</parameter>
//   …</invoke>
//   </minimax:tool_call>[e~[
// <minimax:tool_call> is an added token of MiniMax's tokenizer (selection
// asks for it, by id); </minimax:tool_call>, <think>, </think> count by id
// where the tokenizer has them, else are read from text, and <invoke /
// </invoke> are always text (text_markers.h). <invoke counts only inside
// the section; elsewhere it is text. The template writes a string value
// bare and any other value with tojson, so a value that parses as JSON to
// anything but a string is that JSON, and everything else the raw string
// (so a string the model wrote as "12" reads back as the number 12, as the
// template would have written the number). A call is decoded at </invoke>
// (invoke_calls.h); one without a name, with a broken parameter, or that
// the output ends inside, is text, markers and all. Ids: call_1, call_2….
// [e~[ (MiniMax's end of turn) ends the message where it is one token.
#include "chat/replies/invoke_calls.h"

namespace waste::chat::replies {

ReplyFormat minimax_reply_format() {
    return invoke_calls_format("minimax",
                               {"<minimax:tool_call>", "</minimax:tool_call>", "<invoke", "</invoke>", "[e~[", "<think>",
                                "</think>"},
                               1, {"<parameter", "</parameter>", false}, {1, 2, 3, 5, 6});
}

}  // namespace waste::chat::replies
