// reply_message.cpp — the shared message state (see reply_message.h).
#include "chat/replies/reply_message.h"

#include <algorithm>

namespace waste::chat::replies {

namespace {
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
}  // namespace

std::string_view trim_space(std::string_view text) {
    while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
    while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
    return text;
}

bool all_space(std::string_view text) {
    for (const char c : text)
        if (!is_space(c)) return false;
    return true;
}

void ReplyMessage::add_reasoning(std::string_view text, ReplyDelta& delta) {
    reasoning_ += text;
    delta.reasoning += text;
}

void ReplyMessage::add_content(std::string_view text, ReplyDelta& delta) {
    content_ += text;
    delta.content += text;
}

bool ReplyMessage::open_call(std::string name, std::string id, ReplyDelta& delta) {
    if (!can_open_call()) return false;
    ReplyToolCall call;
    call.name = std::move(name);
    call.id = std::move(id);
    call.index = static_cast<int64_t>(calls_.size()) + 1;
    call.has_raw = true;  // every family here gives the arguments as text
    call.raw = "{}";
    calls_.push_back(std::move(call));
    delta.calls.push_back(calls_.size() - 1);
    return true;
}

void ReplyMessage::set_arguments(std::string raw, ReplyDelta& delta) {
    if (calls_.empty()) return;
    calls_.back().raw = std::move(raw);
    const size_t last = calls_.size() - 1;
    if (std::find(delta.calls.begin(), delta.calls.end(), last) == delta.calls.end()) delta.calls.push_back(last);
}

Json ReplyMessage::message_json() const { return reply_message_json(content_, reasoning_, calls_, finished); }

}  // namespace waste::chat::replies
