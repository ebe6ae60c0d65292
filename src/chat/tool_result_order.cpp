// tool_result_order.cpp — re-ordering runs of tool results by call position
// (see tool_result_order.h).
#include "chat/tool_result_order.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

namespace waste::chat {

std::vector<MessageView> order_tool_results(const std::vector<MessageView>& messages) {
    std::vector<MessageView> out = messages;
    // call id -> (1-based position, function name) of the most recent assistant message
    std::map<std::string, std::pair<size_t, std::string>> calls;
    size_t i = 0;
    while (i < out.size()) {
        const MessageView& message = out[i];
        if (message.role == "assistant") {
            calls.clear();  // an assistant without tool_calls empties the index
            for (size_t k = 0; k < message.tool_calls.size(); ++k) {
                const ToolCallView& call = message.tool_calls[k];
                if (call.has_id) calls.emplace(call.id, std::make_pair(k + 1, call.name));  // a duplicate keeps its first
            }
        }
        if (message.role != "tool") {
            ++i;
            continue;
        }
        size_t end = i;
        while (end < out.size() && out[end].role == "tool") ++end;
        const bool all_match = std::all_of(out.begin() + static_cast<ptrdiff_t>(i), out.begin() + static_cast<ptrdiff_t>(end),
                                           [&](const MessageView& m) { return m.has_call_id && calls.count(m.call_id); });
        if (all_match) {
            std::stable_sort(out.begin() + static_cast<ptrdiff_t>(i), out.begin() + static_cast<ptrdiff_t>(end),
                             [&](const MessageView& a, const MessageView& b) {
                                 return calls.at(a.call_id).first < calls.at(b.call_id).first;
                             });
            for (size_t k = i; k < end; ++k) out[k].tool_name = calls.at(out[k].call_id).second;
        }
        i = end;
    }
    return out;
}

}  // namespace waste::chat
