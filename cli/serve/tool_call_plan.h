// tool_call_plan.h — tool_choice enforced: `"required"` or
// `{"type": "function", "function": {"name": X}}` makes the reply one call
// in K3's format (k3-chat.md §5.4), its arguments held to the function's
// `parameters` schema (docs/SERVE.md "Structured output"). XTML only: the
// chat.json renderer refuses a tool_choice that demands a call.
//
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
// format/channel: the renderer's. think_ends: the EOS and the stop ids.
// Throws ApiError (400) for a tool_choice that cannot be enforced.
std::unique_ptr<ConstrainedReply> constrain_tool_call(const nlohmann::json& request, const std::string& body,
                                                      GrammarCache& grammars, const waste_tokenizer* tokenizer,
                                                      const std::string& format, const std::string& channel,
                                                      std::vector<int32_t> think_ends);

}  // namespace waste_serve
