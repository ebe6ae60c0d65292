// tool_result_order.h — binding OpenAI's tool results to XTML's call
// positions (k3-chat.md §5.5).
//
// XTML binds a result to its call by position; OpenAI by tool_call_id, in
// any order. Each run of consecutive tool messages is stably sorted by the
// position of its call in the most recent assistant message, and takes
// that call's name — but only when every message of the run matches a
// call; otherwise the run stays as sent.
#pragma once

#include <vector>

#include "chat/chat_request.h"

namespace waste::chat {

// The messages in rendering order (tool results re-ordered and renamed).
std::vector<MessageView> order_tool_results(const std::vector<MessageView>& messages);

}  // namespace waste::chat
