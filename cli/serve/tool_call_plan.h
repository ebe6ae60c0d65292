// tool_call_plan.h — tool_choice enforced: `"required"` or
// `{"type": "function", "function": {"name": X}}` makes the reply one call,
// its arguments held to the function's `parameters` schema (docs/SERVE.md
// "Structured output"), in the model's own call format: K3's XTML (below),
// or a Jinja family's as its reply format's call syntax describes it
// (waste_chat_render_json's call_syntax: Qwen3/Hermes, Kimi K2, DeepSeek
// V3.1, GLM, gpt-oss harmony). The chat.json renderer refuses a tool_choice
// that demands a call.
//
// A Jinja family's call: think, if the prompt opened it, until the family's
// </think> (the markers that would open a call masked); then its parts in
// order: markers and text written by the server, the name written (one
// tool) or picked under a grammar of the names, JSON arguments held to the
// schema, or (GLM) each property's key written and its value held: JSON
// text for non-strings, for strings bare text that reads back as a string
// (not JSON, no "</"). Names are letters, digits, '_', '-', '.'; the rest
// is refused with the function, the path and the keyword.
//
// K3's XTML:
// The reply: think (if the prompt opened it) free, then the server writes
// the empty response and opens the call:
//   <|close|>response<|sep|><|open|>tools<|sep|><|open|>call tool="X" index="1"<|sep|>
// (with "required" and several tools, the model chooses X under a grammar of
// their names). Then, per property of `parameters` in the schema's order,
// required and optional alike (writing every listed property is always
// valid), the server writes the argument's tag and the model its value:
//   <|open|>argument key="K" type="T"<|sep|>VALUE<|close|>argument<|sep|>
// VALUE held to the property's schema: for type string the raw text (§5.4:
// unquoted), bounded by minLength/maxLength or one of its enum; otherwise its
// JSON text, compiled as a JSON Schema. After the last argument the reply
// ends (finish_reason "tool_calls"). What cannot be held exactly is refused,
// 400 with param "tool_choice", naming the function, the path and the keyword.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "constrained_reply.h"
#include "grammar_cache.h"

namespace waste_serve {

// null when tool_choice demands no call. body: the request's text (re-read
// with keys in order: arguments follow the schema's property order).
// rendered: the renderer's answer (its format, reply_format, call_syntax);
// channel: its channel. think_ends: the EOS and the stop ids. Throws
// ApiError (400) for a tool_choice that cannot be enforced.
std::unique_ptr<ConstrainedReply> constrain_tool_call(const nlohmann::json& request, const std::string& body,
                                                      GrammarCache& grammars, const waste_tokenizer* tokenizer,
                                                      const nlohmann::json& rendered, const std::string& channel,
                                                      std::vector<int32_t> think_ends);

}  // namespace waste_serve
