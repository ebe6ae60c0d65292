// xtml_render.cpp — K3's XTML prompt (see xtml_render.h; k3-chat.md §3–§11).
#include "chat/xtml_render.h"

#include <fmt/format.h>

#include "chat/system_notes.h"
#include "chat/tool_result_order.h"

namespace waste::chat {

std::string escape_attribute(std::string_view value) {
    std::string out;
    out.reserve(value.size());
    for (const char c : value) {
        if (c == '&') out += "&amp;";
        else if (c == '"') out += "&quot;";
        else out.push_back(c);
    }
    return out;
}

namespace {

using Attributes = std::vector<std::pair<std::string, std::string>>;

class XtmlWriter {
public:
    XtmlWriter(const ChatRequest& request, RenderedPrompt& prompt)
        : request_(request), prompt_(prompt), out_(prompt.segments) {}

    // <|open|>NAME ATTRS<|sep|>: the name one segment, each attribute four (§2).
    void open(std::string_view name, const Attributes& attributes = {}) {
        out_.markup(xtml_open);
        out_.plain(name);
        for (const auto& [key, value] : attributes) {
            out_.plain(" " + key);
            out_.plain("=\"");
            out_.plain(escape_attribute(value));
            out_.plain("\"");
        }
        out_.markup(xtml_sep);
    }
    void close(std::string_view name) {
        out_.markup(xtml_close);
        out_.plain(name);
        out_.markup(xtml_sep);
    }
    void close_message() {
        close("message");
        out_.markup(xtml_end_of_msg);
    }
    void element(std::string_view name, const Attributes& attributes, std::string_view body) {
        open(name, attributes);
        out_.plain(body);
        close(name);
    }
    void system_note(std::string_view type, std::string_view body) {
        open("message", {{"role", "system"}, {"type", std::string(type)}});
        out_.plain(body);
        close_message();
    }

    // Content: each text its own segment; image parts and (with image sizes)
    // placeholders in text take the next media block (§10).
    void content(const std::vector<ContentPart>& parts) {
        for (const ContentPart& part : parts) {
            if (part.image) {
                if (request_.has_image_sizes) media_block(part.image_ref);
                else {
                    prompt_.images.push_back(part.image_ref);
                    out_.markup(xtml_image_placeholder);
                }
                continue;
            }
            if (!request_.has_image_sizes) {
                out_.plain(part.text);
                continue;
            }
            std::string_view text = part.text;
            const std::string_view placeholder = xtml_image_placeholder;
            for (size_t at; (at = text.find(placeholder)) != std::string_view::npos;) {
                out_.plain(text.substr(0, at));
                media_block({});
                text.remove_prefix(at + placeholder.size());
            }
            out_.plain(text);
        }
    }

    void finish_images() const {
        if (request_.has_image_sizes && blocks_ != request_.image_sizes.size())
            throw RequestError(fmt::format("the conversation has {} image{} (image parts and placeholders), but image_sizes gives {}",
                                           blocks_, blocks_ == 1 ? "" : "s", request_.image_sizes.size()),
                               "image_sizes");
    }

    SegmentWriter& out() { return out_; }

private:
    void media_block(const std::string& ref) {
        if (blocks_ >= request_.image_sizes.size())
            throw RequestError(fmt::format("the conversation has more images (image parts and placeholders) than the {} of image_sizes",
                                           request_.image_sizes.size()),
                               "image_sizes");
        const auto [width, height] = request_.image_sizes[blocks_++];
        out_.markup(fmt::format("<|media_begin|>image {}x{}<|media_content|><|media_pad|><|media_end|>", width, height));
        prompt_.images.push_back(ref);
    }

    const ChatRequest& request_;
    RenderedPrompt& prompt_;
    SegmentWriter out_;
    size_t blocks_ = 0;
};

std::string tool_declaration(const Json& tools, bool lazy) {
    return std::string(lazy ? lazy_tools_preamble : tools_preamble) + "```json\n" +
           python_json_dumps(tools, JsonForm::declaration) + "\n```";
}

// One argument element per key, typed (§5.4).
void write_arguments(XtmlWriter& xtml, const ToolCallView& call) {
    if (call.arguments_kind == ToolCallView::Arguments::raw) {
        xtml.element("json", {{"type", "object"}}, call.raw);
        return;
    }
    if (call.arguments_kind != ToolCallView::Arguments::object) return;
    for (auto it = call.arguments.begin(); it != call.arguments.end(); ++it) {
        const Json& value = it.value();
        std::string type, text;
        if (value.is_boolean()) {
            type = "boolean";
            text = value.get<bool>() ? "true" : "false";
        } else if (value.is_null()) {
            type = text = "null";
        } else if (value.is_number()) {
            type = "number";
            text = python_json_dumps(value, JsonForm::argument);
        } else if (value.is_string()) {
            type = "string";
            text = value.get<std::string>();
        } else {
            type = value.is_object() ? "object" : "array";
            text = python_json_dumps(value, JsonForm::argument);
        }
        xtml.element("argument", {{"key", it.key()}, {"type", type}}, text);
    }
}

}  // namespace

RenderedPrompt render_xtml(const ChatRequest& request) {
    RenderedPrompt prompt;
    prompt.thinking = request.thinking;
    XtmlWriter xtml(request, prompt);

    if (request.tools) xtml.system_note("tool-declare", tool_declaration(*request.tools, false));
    if (request.thinking && !request.effort.empty()) xtml.system_note("thinking-effort", thinking_effort_note(request.effort));

    const MessageView* last_assistant = nullptr;
    size_t tool_index = 0;
    for (const MessageView& message : order_tool_results(request.messages)) {
        if (message.role == "system" && message.lazy_tools) {
            xtml.system_note("tool-declare", tool_declaration(*message.lazy_tools, true));
            continue;
        }
        if (message.role == "system" || message.role == "user") {
            Attributes attributes{{"role", message.role}};
            if (!message.name.empty()) attributes.emplace_back("name", message.name);
            xtml.open("message", attributes);
            xtml.content(message.content);
            xtml.close_message();
            continue;
        }
        if (message.role == "assistant") {
            last_assistant = &message;
            tool_index = 0;
            Attributes attributes{{"role", "assistant"}};
            if (!message.name.empty()) attributes.emplace_back("name", message.name);
            xtml.open("message", attributes);
            if (request.thinking) {
                xtml.open("think");
                if (!is_blank(message.reasoning)) xtml.out().plain(message.reasoning);
                xtml.close("think");
            }
            xtml.open("response");
            xtml.content(message.content);
            xtml.close("response");
            if (!message.tool_calls.empty()) {
                xtml.open("tools");
                for (size_t k = 0; k < message.tool_calls.size(); ++k) {
                    const ToolCallView& call = message.tool_calls[k];
                    xtml.open("call", {{"tool", call.name}, {"index", std::to_string(k + 1)}});
                    write_arguments(xtml, call);
                    xtml.close("call");
                }
                xtml.close("tools");
            }
            xtml.close_message();
            continue;
        }
        // a tool result
        ++tool_index;
        std::string name = message.tool_name;
        if (name.empty() && last_assistant && tool_index <= last_assistant->tool_calls.size())
            name = last_assistant->tool_calls[tool_index - 1].name;
        if (name.empty())
            throw RequestError(fmt::format("messages[{}] (a tool result) has no tool name: give it \"name\", or a tool_call_id of "
                                           "the assistant's call it answers",
                                           message.index),
                               fmt::format("messages[{}]", message.index));
        xtml.open("message", {{"role", "tool"}, {"tool", name}, {"index", std::to_string(tool_index)}});
        xtml.content(message.content);
        xtml.close_message();
    }
    xtml.finish_images();

    switch (request.tool_choice) {
        case ToolChoiceNote::required: xtml.system_note("tool-choice", tool_choice_required_note); break;
        case ToolChoiceNote::none: xtml.system_note("tool-choice", tool_choice_none_note); break;
        case ToolChoiceNote::named: xtml.system_note("tool-choice", tool_choice_named_note(request.tool_choice_name)); break;
        case ToolChoiceNote::nothing: break;
    }
    switch (request.response_format) {
        case ResponseFormatNote::json_object: xtml.system_note("response-format", json_object_note); break;
        case ResponseFormatNote::json_schema: xtml.system_note("response-format", json_schema_note(request.schema)); break;
        case ResponseFormatNote::nothing: break;
    }
    if (request.add_generation_prompt) {
        prompt.channel = request.thinking ? "think" : "response";
        xtml.open("message", {{"role", "assistant"}});
        xtml.open(prompt.channel);
    }
    return prompt;
}

}  // namespace waste::chat
