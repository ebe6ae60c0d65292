// reply_message.h — the message a reply parser builds (reasoning, content,
// tool calls, finished) and the deltas it reports, shared by every family's
// parser so that the rule "concatenated deltas equal the final message"
// lives in one place: text reaches the message only through add_*, which
// also write the delta.
//
// Deliberately not here: any family's markup (the parsers beside this file).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "chat/xtml_reply.h"

namespace waste::chat::replies {

// Why: a reply is bounded by the context length, but a hostile or broken
// stream must not grow one held call without bound either. A call's held
// text (markers, name, arguments) stops at this many bytes.
inline constexpr size_t max_call_bytes = size_t{1} << 20;

class ReplyMessage {
public:
    void add_reasoning(std::string_view text, ReplyDelta& delta);
    void add_content(std::string_view text, ReplyDelta& delta);
    // A new call, announced in the delta; false (nothing added) once
    // max_reply_calls calls are held.
    bool open_call(std::string name, std::string id, ReplyDelta& delta);
    // The last call's OpenAI "arguments" string, verbatim.
    void set_arguments(std::string raw, ReplyDelta& delta);
    // "call_1", "call_2", ...: the id of the next call where the format has none.
    std::string next_call_id() const { return "call_" + std::to_string(calls_.size() + 1); }
    bool can_open_call() const { return calls_.size() < max_reply_calls; }

    const std::string& reasoning() const { return reasoning_; }
    const std::string& content() const { return content_; }
    const std::vector<ReplyToolCall>& tool_calls() const { return calls_; }
    bool finished = false;  // the format's end-of-message token was seen

    // k3-chat.md §12.6's shape, as the XTML parser writes it.
    Json message_json() const;

private:
    std::string reasoning_, content_;
    std::vector<ReplyToolCall> calls_;
};

std::string_view trim_space(std::string_view text);
bool all_space(std::string_view text);

}  // namespace waste::chat::replies
