// xtml_render.h — K3's prompt format (XTML, k3-chat.md §1–§11): a validated
// chat request to segments.
//
// Deliberately not here: validation of the request's fields
// (chat_request.h), encoding (segments.h), the chat.json path
// (chat_json_render.h).
#pragma once

#include <string>

#include "chat/chat_request.h"
#include "chat/segments.h"

namespace waste::chat {

// The four XTML markers and the image tokens (§1, §10).
inline constexpr const char* xtml_open = "<|open|>";
inline constexpr const char* xtml_close = "<|close|>";
inline constexpr const char* xtml_sep = "<|sep|>";
inline constexpr const char* xtml_end_of_msg = "<|end_of_msg|>";
inline constexpr const char* xtml_image_placeholder = "<|kimi_image_placeholder|>";

// Attribute value escaping: & first, then " (§1).
std::string escape_attribute(std::string_view value);

// Throws RequestError for a conversation that cannot be rendered: a tool
// result with no name to give it, images that do not match image_sizes.
RenderedPrompt render_xtml(const ChatRequest& request);

}  // namespace waste::chat
