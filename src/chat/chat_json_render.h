// chat_json_render.h — a chat request through a container's chat.json
// (container-v0 §6), for models that do not speak XTML (kimi-mini).
//
// Each message is prefix (markup) + its text, one plain segment per string
// or text part (never joined: Rule 2 of k3-chat.md §2 holds here too) +
// suffix (markup); then "open" when the prompt opens an answer. A template
// is a role's two strings and nothing else, so what it cannot express is
// refused by name rather than dropped: tools, tool calls and tool results
// (unless chat.json has a "tool" role), images, and a tool_choice that
// demands a call. Reasoning of past turns is dropped (there is no think
// channel); reasoning_effort is validated but changes nothing.
#pragma once

#include "chat/chat_request.h"
#include "chat/segments.h"
#include "text/chat_template.h"

namespace waste::chat {

RenderedPrompt render_chat_json(const ChatRequest& request, const text::ChatTemplate& chat_template);

}  // namespace waste::chat
