// chat_json_render.cpp — a chat request through chat.json (see chat_json_render.h).
#include "chat/chat_json_render.h"

#include <fmt/format.h>

namespace waste::chat {

namespace {

[[noreturn]] void cannot_express(const std::string& what, const std::string& param) {
    throw RequestError(fmt::format("{}: this model has no XTML markers, and its chat.json cannot express that", what), param);
}

}  // namespace

RenderedPrompt render_chat_json(const ChatRequest& request, const text::ChatTemplate& chat_template) {
    if (request.tools) cannot_express("tools were given", "tools");
    if (request.tool_choice == ToolChoiceNote::required || request.tool_choice == ToolChoiceNote::named)
        cannot_express("tool_choice asks for a tool call", "tool_choice");
    if (request.image_parts > 0) throw RequestError("this model has no vision tower and its chat.json has no image markup", "messages", "vision_disabled");
    RenderedPrompt prompt;
    SegmentWriter out(prompt.segments);
    for (const MessageView& message : request.messages) {
        const std::string param = fmt::format("messages[{}]", message.index);
        if (message.lazy_tools) cannot_express(param + " declares tools", param + ".tools");
        if (!message.tool_calls.empty()) cannot_express(param + " has tool_calls", param + ".tool_calls");
        if (!chat_template.has_role(message.role)) {
            std::string known;
            for (const std::string& role : chat_template.role_names()) known += (known.empty() ? "" : ", ") + role;
            throw RequestError(fmt::format("{}.role \"{}\" is not in this model's chat.json (it has {})", param, message.role, known),
                               param + ".role");
        }
        const auto& [prefix, suffix] = chat_template.role(message.role);
        out.markup(prefix);
        for (const ContentPart& part : message.content) out.plain(part.text);
        out.markup(suffix);
    }
    if (request.add_generation_prompt) out.markup(chat_template.open());
    return prompt;
}

}  // namespace waste::chat
