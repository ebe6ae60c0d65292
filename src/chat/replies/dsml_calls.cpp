// dsml_calls.cpp — DeepSeek-V3.2's reply format (DSML):
//   <think> … </think>
//   <｜DSML｜function_calls>
//   <｜DSML｜invoke name="NAME">
//   <｜DSML｜parameter name="P" string="true">raw string</｜DSML｜parameter>
//   <｜DSML｜parameter name="Q" string="false">JSON</｜DSML｜parameter>
//   </｜DSML｜invoke>
//   …</｜DSML｜function_calls><｜end▁of▁sentence｜>
// DeepSeek's tokenizer has no token for any ｜DSML｜ piece, so the section
// and call markers are read from text (text_markers.h), as are <think> and
// </think> where the tokenizer lacks them; <｜end▁of▁sentence｜> counts by
// id. A consequence: DSML markup typed by the model as text is structure
// (there is no other way it can write it). The call-open marker counts only
// inside <｜DSML｜function_calls>; elsewhere it is text. A call is decoded at
// its </｜DSML｜invoke> (invoke_calls.h): string="true" values are the raw
// string, string="false" values JSON (the raw string if it does not parse);
// a call without a name or with a broken parameter, or one the output ends
// inside, is text, markers and all. Ids: call_1, call_2… (DSML has none).
#include "chat/replies/invoke_calls.h"

namespace waste::chat::replies {

ReplyFormat dsml_reply_format() {
    return invoke_calls_format("dsml",
                               {"<｜DSML｜function_calls>", "</｜DSML｜function_calls>", "<｜DSML｜invoke", "</｜DSML｜invoke>",
                                "<｜end▁of▁sentence｜>", "<think>", "</think>"},
                               0, {"<｜DSML｜parameter", "</｜DSML｜parameter>", true}, {0, 1, 2, 3, 5, 6});
}

}  // namespace waste::chat::replies
