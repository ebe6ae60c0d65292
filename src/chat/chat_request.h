// chat_request.h — an OpenAI chat-completions request, validated and read
// into what the prompt renderers need (k3-chat.md §4–§10, §13.12).
//
// The views point into the request's parsed JSON, which must outlive them.
// Only the fields a prompt depends on are read and validated; sampling
// fields and anything unknown are the server's (§13.11) and pass untouched.
//
// Deliberately not here: rendering (xtml_render.h, chat_json_render.h) and
// the errors of a conversation that is valid JSON but cannot be rendered
// (a tool result without a name, images that do not match their sizes),
// which the renderers raise.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "chat/xtml_json.h"

namespace waste::chat {

// A request the server would refuse: OpenAI's invalid_request_error with
// the offending parameter ("messages[2].content") and an optional code.
class RequestError : public std::runtime_error {
public:
    RequestError(std::string message, std::string param, std::string code = {})
        : std::runtime_error(std::move(message)), param_(std::move(param)), code_(std::move(code)) {}
    const std::string& param() const { return param_; }
    const std::string& code() const { return code_; }

private:
    std::string param_, code_;
};

struct ContentPart {
    bool image = false;
    std::string text;       // a text part's text
    std::string image_ref;  // an image part's URL or path ("" when it has none)
};

struct ToolCallView {
    std::string id;
    bool has_id = false;
    std::string name;
    enum class Arguments { none, object, raw } arguments_kind = Arguments::none;
    Json arguments;       // the object (Arguments::object)
    std::string raw;      // the string as sent (Arguments::raw)
};

struct MessageView {
    size_t index = 0;             // position in the request's messages
    std::string role;             // system, user, assistant or tool (developer reads as system)
    std::vector<ContentPart> content;  // empty for null, "" or []
    std::string name;             // "" when absent
    std::string reasoning;        // reasoning_content, else reasoning ("" when neither)
    std::vector<ToolCallView> tool_calls;
    std::string call_id;          // a tool result's tool_call_id, else its id
    bool has_call_id = false;
    std::string tool_name;        // a tool result's "tool", else its "name" ("" when neither)
    const Json* lazy_tools = nullptr;  // a system message's non-empty tools (§5.2)
};

enum class ToolChoiceNote { nothing, required, none, named };
enum class ResponseFormatNote { nothing, json_object, json_schema };

struct RenderOptions {
    bool thinking_default = true;  // the server's default (--no-thinking flips it)
    bool render_only_keys = false; // honour "image_sizes" and "add_generation_prompt"
    // A server that read the images itself: their sizes, one per image part in
    // order (k3-chat.md §10); the request's own image_sizes is not read then.
    std::optional<std::vector<std::pair<uint64_t, uint64_t>>> measured_image_sizes;
    // Render image parts as bare placeholders only to list them ("images"),
    // for a caller that reads them and renders again with their sizes.
    bool list_images = false;
};

struct ChatRequest {
    std::vector<MessageView> messages;
    const Json* tools = nullptr;  // the request's tools when a non-empty array
    ToolChoiceNote tool_choice = ToolChoiceNote::nothing;
    std::string tool_choice_name;  // ToolChoiceNote::named
    ResponseFormatNote response_format = ResponseFormatNote::nothing;
    Json schema;                   // ResponseFormatNote::json_schema (null when the client sent none)
    bool thinking = true;
    std::string effort;            // low, high or max when a note is due; else ""
    bool add_generation_prompt = true;
    bool has_image_sizes = false;  // render only: the request carried image_sizes
    std::vector<std::pair<uint64_t, uint64_t>> image_sizes;
    size_t image_parts = 0;        // image parts in all messages
};

// Why: a request body is at most the server's 64 MiB cap; no conversation a
// model can hold has more messages or parts than this.
inline constexpr size_t max_request_messages = 1u << 16;
inline constexpr size_t max_parts_per_message = 1u << 12;
inline constexpr uint64_t max_image_side = 1u << 20;

// Throws RequestError naming the parameter.
ChatRequest read_chat_request(const Json& body, const RenderOptions& options);

// messages[index]'s role as sent, one of OpenAI's (system, developer, user,
// assistant, tool); every prompt format accepts these and no other.
// Throws RequestError naming messages[index].role.
std::string message_role(const Json& message, size_t index);

}  // namespace waste::chat
