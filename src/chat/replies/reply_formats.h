// reply_formats.h — choosing a model's reply format from its tokenizer.
//
// The format names (waste_reply_parser_create_format):
//   "xtml"      Kimi K3 (k3-chat.md §12)
//   "harmony"   gpt-oss: analysis/final/commentary channels, recipient calls
//   "deepseek"  DeepSeek-V3.1: <｜tool▁calls▁begin｜> … calls, <think>
//   "kimi-k2"   Kimi K2 / K2-Thinking: <|tool_calls_section_begin|> … calls, <think>
//   "glm"       GLM-4.5/4.6: <tool_call>NAME <arg_key>/<arg_value> …</tool_call>, <think>
//   "minimax"   MiniMax-M2: <minimax:tool_call><invoke name=…><parameter name=…>…, <think>
//   "hermes"    Qwen3 (and Qwen3-Coder's XML inside the same markers): <tool_call> JSON, <think>
//   "reasoning" <think> … </think> only
//   "content"   every token is content (a chat.json model)
//   "dsml"      DeepSeek-V3.2: <｜DSML｜function_calls><｜DSML｜invoke name=…> … (text markup), <think>
//
// Selection looks at which markers the tokenizer has as single special
// tokens, most specific first (the list above, top down; "dsml" has no
// tokens to look for). The chat template breaks one tie: a DeepSeek
// tokenizer whose template writes DSML calls (V3.2) gets "dsml" instead of
// "deepseek".
#pragma once

#include <string>
#include <string_view>

#include "chat/replies/family_parser.h"
#include "text/tokenizer.h"

namespace waste::chat::replies {

std::string select_reply_format(const text::Tokenizer& tokenizer, std::string_view chat_template);

// A format's call syntax as JSON: {"call": [PART...], "think_close": text,
// "think_masked": [text...]}, each PART {"kind": "marker"|"text"|"name"|
// "arguments"|"each_argument"|"key"|"value"} with "text" (marker, text) or
// "argument": [PART...] (each_argument). null when the format writes no calls.
Json call_syntax_json(const ReplyFormat& format);

// The first required marker the tokenizer lacks as one special token (and,
// with text_allowed, that the format cannot read from text), or "".
std::string missing_marker(const ReplyFormat& format, const text::Tokenizer& tokenizer, bool text_allowed = false);

}  // namespace waste::chat::replies
