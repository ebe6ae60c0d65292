// chat_request.cpp — validating an OpenAI chat request and reading the
// fields the prompt depends on (see chat_request.h).
#include "chat/chat_request.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

namespace waste::chat {

namespace {

const Json* member(const Json& object, const char* key) {
    if (!object.is_object()) return nullptr;
    const auto it = object.find(key);
    if (it == object.end() || it->is_null()) return nullptr;
    return &*it;
}

std::string type_name(const Json& value) {
    switch (value.type()) {
        case Json::value_t::null: return "null";
        case Json::value_t::boolean: return "a boolean";
        case Json::value_t::number_integer:
        case Json::value_t::number_unsigned:
        case Json::value_t::number_float: return "a number";
        case Json::value_t::string: return "a string";
        case Json::value_t::array: return "an array";
        case Json::value_t::object: return "an object";
        default: return "a value of another kind";
    }
}

// An optional string member: "" when absent or null; anything else but a string is refused.
std::string optional_string(const Json& object, const char* key, const std::string& param) {
    const Json* value = member(object, key);
    if (!value) return {};
    if (!value->is_string()) throw RequestError(fmt::format("{} must be a string, not {}", param, type_name(*value)), param);
    return value->get<std::string>();
}

// Python truthiness, for the fallbacks K3's request mapping writes with `or`.
bool truthy(const Json* value) {
    if (!value || value->is_null()) return false;
    if (value->is_boolean()) return value->get<bool>();
    if (value->is_number()) return value->get<double>() != 0.0;
    if (value->is_string() || value->is_array() || value->is_object()) return !value->empty();
    return true;
}

std::vector<ContentPart> read_content(const Json& message, const std::string& param, size_t& image_parts) {
    std::vector<ContentPart> parts;
    const Json* content = member(message, "content");
    if (!content) return parts;
    if (content->is_string()) {
        if (!content->get_ref<const std::string&>().empty()) parts.push_back({false, content->get<std::string>(), {}});
        return parts;
    }
    if (!content->is_array())
        throw RequestError(fmt::format("{}.content must be a string, an array of parts or null, not {}", param, type_name(*content)),
                           param + ".content");
    if (content->size() > max_parts_per_message)
        throw RequestError(fmt::format("{}.content has {} parts, more than {}", param, content->size(), max_parts_per_message),
                           param + ".content");
    for (size_t i = 0; i < content->size(); ++i) {
        const Json& part = (*content)[i];
        const std::string part_param = fmt::format("{}.content[{}]", param, i);
        if (!part.is_object()) throw RequestError(fmt::format("{} must be an object, not {}", part_param, type_name(part)), part_param);
        const Json* type = member(part, "type");
        if (!type || !type->is_string())
            throw RequestError(fmt::format("{} needs a string \"type\" (\"text\", \"image_url\", ...)", part_param), part_param + ".type");
        const std::string& kind = type->get_ref<const std::string&>();
        if (kind == "image" || kind == "image_url") {
            ContentPart image{true, {}, {}};
            // OpenAI's {"image_url": {"url": ...}}, or the URL as a string, or {"image": ...}.
            for (const char* key : {"image_url", "image", "url"}) {
                const Json* ref = member(part, key);
                if (ref && ref->is_object()) ref = member(*ref, "url");
                if (ref && ref->is_string()) {
                    image.image_ref = ref->get<std::string>();
                    break;
                }
            }
            ++image_parts;
            parts.push_back(std::move(image));
            continue;
        }
        const Json* text = member(part, "text");
        if (!text || !text->is_string())
            throw RequestError(fmt::format("{} (type \"{}\") needs a string \"text\"", part_param, kind), part_param + ".text");
        if (!text->get_ref<const std::string&>().empty()) parts.push_back({false, text->get<std::string>(), {}});
    }
    return parts;
}

ToolCallView read_tool_call(const Json& call, const std::string& param) {
    if (!call.is_object()) throw RequestError(fmt::format("{} must be an object, not {}", param, type_name(call)), param);
    ToolCallView view;
    if (const Json* id = member(call, "id"); id && id->is_string()) {
        view.id = id->get<std::string>();
        view.has_id = true;
    }
    // {"function": {"name", "arguments"}}, or the flat {"name", "arguments"}.
    const Json* function = member(call, "function");
    std::string function_param = param;
    if (function) {
        if (!function->is_object())
            throw RequestError(fmt::format("{}.function must be an object, not {}", param, type_name(*function)), param + ".function");
        function_param += ".function";
    } else {
        function = &call;
    }
    view.name = optional_string(*function, "name", function_param + ".name");
    if (view.name.empty())
        throw RequestError(fmt::format("{} has no function name", param), function_param + ".name");
    const Json* arguments = member(*function, "arguments");
    const std::string arguments_param = function_param + ".arguments";
    if (!arguments) return view;
    if (arguments->is_object()) {
        view.arguments_kind = ToolCallView::Arguments::object;
        view.arguments = *arguments;
        return view;
    }
    if (!arguments->is_string())
        throw RequestError(fmt::format("{} must be an object or a JSON string, not {}", arguments_param, type_name(*arguments)),
                           arguments_param);
    const std::string& text = arguments->get_ref<const std::string&>();
    if (is_blank(text)) return view;
    Json parsed;
    if (!parse_json_bounded(text, parsed)) {
        // Not JSON: kept verbatim as a raw json block (k3-chat.md §5.4).
        view.arguments_kind = ToolCallView::Arguments::raw;
        view.raw = text;
        return view;
    }
    if (!parsed.is_object())
        throw RequestError(fmt::format("{} is JSON {}, not an object", arguments_param, type_name(parsed)), arguments_param);
    view.arguments_kind = ToolCallView::Arguments::object;
    view.arguments = std::move(parsed);
    return view;
}

}  // namespace

std::string message_role(const Json& message, size_t index) {
    const std::string param = fmt::format("messages[{}]", index);
    const Json* role = member(message, "role");
    if (!role || !role->is_string()) throw RequestError(fmt::format("{} needs a string \"role\"", param), param + ".role");
    const std::string& name = role->get_ref<const std::string&>();
    if (name != "system" && name != "developer" && name != "user" && name != "assistant" && name != "tool")
        throw RequestError(fmt::format("{}.role \"{}\" is not one of system, developer, user, assistant, tool", param, name),
                           param + ".role");
    return name;
}

namespace {

MessageView read_message(const Json& message, size_t index, size_t& image_parts) {
    const std::string param = fmt::format("messages[{}]", index);
    if (!message.is_object()) throw RequestError(fmt::format("{} must be an object, not {}", param, type_name(message)), param);
    MessageView view;
    view.index = index;
    view.role = message_role(message, index);
    if (view.role == "developer") view.role = "system";  // OpenAI's newer name for it
    view.content = read_content(message, param, image_parts);
    view.name = optional_string(message, "name", param + ".name");
    for (const char* key : {"reasoning_content", "reasoning"}) {
        const Json* reasoning = member(message, key);
        if (reasoning && reasoning->is_string() && !reasoning->get_ref<const std::string&>().empty()) {
            view.reasoning = reasoning->get<std::string>();
            break;
        }
    }
    if (const Json* calls = member(message, "tool_calls")) {
        if (!calls->is_array())
            throw RequestError(fmt::format("{}.tool_calls must be an array, not {}", param, type_name(*calls)), param + ".tool_calls");
        if (!calls->empty() && view.role != "assistant")
            throw RequestError(fmt::format("{} has tool_calls, but only an assistant message may", param), param + ".tool_calls");
        for (size_t i = 0; i < calls->size(); ++i)
            view.tool_calls.push_back(read_tool_call((*calls)[i], fmt::format("{}.tool_calls[{}]", param, i)));
    }
    if (view.role == "tool") {
        for (const char* key : {"tool_call_id", "id"}) {
            const Json* id = member(message, key);
            if (id && id->is_string()) {
                view.call_id = id->get<std::string>();
                view.has_call_id = true;
                break;
            }
        }
        view.tool_name = optional_string(message, "tool", param + ".tool");
        if (view.tool_name.empty()) view.tool_name = view.name;
    }
    if (view.role == "system") {
        if (const Json* tools = member(message, "tools")) {
            if (!tools->is_array())
                throw RequestError(fmt::format("{}.tools must be an array, not {}", param, type_name(*tools)), param + ".tools");
            if (!tools->empty()) view.lazy_tools = tools;
        }
    }
    return view;
}

void read_effort(const Json& body, ChatRequest& request, const RenderOptions& options) {
    std::optional<bool> thinking;
    if (const Json* value = member(body, "thinking")) {
        if (!value->is_boolean())
            throw RequestError(fmt::format("thinking must be true or false, not {}", type_name(*value)), "thinking");
        thinking = value->get<bool>();
    }
    const Json* effort = nullptr;
    std::string param;
    for (const char* key : {"reasoning_effort", "thinking_effort"}) {
        if ((effort = member(body, key))) {
            param = key;
            break;
        }
    }
    if (!effort) {
        if (const Json* reasoning = member(body, "reasoning")) {
            if (!reasoning->is_object())
                throw RequestError(fmt::format("reasoning must be an object ({{\"effort\": ...}}), not {}", type_name(*reasoning)),
                                   "reasoning");
            effort = member(*reasoning, "effort");
            param = "reasoning.effort";
        }
    }
    request.thinking = thinking.value_or(options.thinking_default);
    if (!effort) return;
    if (!effort->is_string())
        throw RequestError(fmt::format("{} must be a string (low, high, max, or none), not {}", param, type_name(*effort)), param);
    std::string value = effort->get<std::string>();
    if (value.size() > 64) value.resize(64);  // the message quotes it; bound what it quotes
    std::string lower = value;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (lower == "none" || lower == "minimal" || lower == "off") {
        request.thinking = false;
        return;
    }
    if (lower == "medium")
        throw RequestError(fmt::format("{} \"{}\" is refused: K3 takes low, high or max (or none to think not at all); its own "
                                       "effort note lists medium, but its encoder rejects it, so pick low or high",
                                       param, value),
                           param);
    if (lower != "low" && lower != "high" && lower != "max")
        throw RequestError(fmt::format("{} \"{}\" is not one of low, high, max, none, minimal, off", param, value), param);
    if (thinking == false)
        throw RequestError(fmt::format("thinking is false but {} is \"{}\": pick one (drop the effort, or let the model think)", param,
                                       value),
                           param);
    request.thinking = true;
    request.effort = lower;
}

void read_render_only_keys(const Json& body, ChatRequest& request) {
    if (const Json* value = member(body, "add_generation_prompt")) {
        if (!value->is_boolean())
            throw RequestError(fmt::format("add_generation_prompt must be true or false, not {}", type_name(*value)),
                               "add_generation_prompt");
        request.add_generation_prompt = value->get<bool>();
    }
    const Json* sizes = member(body, "image_sizes");
    if (!sizes) return;
    if (!sizes->is_array())
        throw RequestError(fmt::format("image_sizes must be an array of [width, height], not {}", type_name(*sizes)), "image_sizes");
    request.has_image_sizes = true;
    for (size_t i = 0; i < sizes->size(); ++i) {
        const Json& size = (*sizes)[i];
        const std::string param = fmt::format("image_sizes[{}]", i);
        auto side = [&](size_t k) -> uint64_t {
            const Json& v = size[k];
            if (!v.is_number_integer() || v.get<int64_t>() < 1 || static_cast<uint64_t>(v.get<int64_t>()) > max_image_side)
                throw RequestError(fmt::format("{} must be [width, height] in pixels, integers from 1 to {}", param, max_image_side), param);
            return static_cast<uint64_t>(v.get<int64_t>());
        };
        if (!size.is_array() || size.size() != 2)
            throw RequestError(fmt::format("{} must be [width, height] in pixels", param), param);
        if (request.image_sizes.size() >= max_parts_per_message * 16)
            throw RequestError(fmt::format("image_sizes has more than {} entries", max_parts_per_message * 16), "image_sizes");
        request.image_sizes.emplace_back(side(0), side(1));
    }
}

}  // namespace

ChatRequest read_chat_request(const Json& body, const RenderOptions& options) {
    if (!body.is_object()) throw RequestError(fmt::format("the request body must be a JSON object, not {}", type_name(body)), "");
    ChatRequest request;
    const Json* messages = member(body, "messages");
    if (!messages) throw RequestError("messages is required", "messages");
    if (!messages->is_array()) throw RequestError(fmt::format("messages must be an array, not {}", type_name(*messages)), "messages");
    if (messages->empty()) throw RequestError("messages must not be empty", "messages");
    if (messages->size() > max_request_messages)
        throw RequestError(fmt::format("messages has {} entries, more than {}", messages->size(), max_request_messages), "messages");
    for (size_t i = 0; i < messages->size(); ++i) request.messages.push_back(read_message((*messages)[i], i, request.image_parts));

    if (const Json* tools = member(body, "tools")) {
        if (!tools->is_array()) throw RequestError(fmt::format("tools must be an array, not {}", type_name(*tools)), "tools");
        if (!tools->empty()) request.tools = tools;
    }
    if (const Json* choice = member(body, "tool_choice")) {
        if (choice->is_string()) {
            const std::string& value = choice->get_ref<const std::string&>();
            if (value == "required") request.tool_choice = ToolChoiceNote::required;
            else if (value == "none") request.tool_choice = ToolChoiceNote::none;
        } else if (choice->is_object()) {
            // {"type": "function", "function": {"name": X}}: no K3 equivalent; a note of ours names X (§8).
            const Json* function = member(*choice, "function");
            const Json* name = function ? member(*function, "name") : member(*choice, "name");
            if (!name || !name->is_string() || name->get_ref<const std::string&>().empty())
                throw RequestError("tool_choice as an object must name a function: {\"type\": \"function\", \"function\": {\"name\": ...}}",
                                   "tool_choice");
            request.tool_choice = ToolChoiceNote::named;
            request.tool_choice_name = name->get<std::string>();
        } else {
            throw RequestError(fmt::format("tool_choice must be a string or an object, not {}", type_name(*choice)), "tool_choice");
        }
    }
    if (const Json* format = member(body, "response_format")) {
        if (!format->is_object())
            throw RequestError(fmt::format("response_format must be an object, not {}", type_name(*format)), "response_format");
        if (const Json* type = member(*format, "type")) {
            if (!type->is_string())
                throw RequestError(fmt::format("response_format.type must be a string, not {}", type_name(*type)), "response_format.type");
            const std::string& kind = type->get_ref<const std::string&>();
            if (kind == "json_object") {
                request.response_format = ResponseFormatNote::json_object;
            } else if (kind == "json_schema") {
                request.response_format = ResponseFormatNote::json_schema;
                const Json* wrapper = member(*format, "json_schema");
                if (wrapper && !wrapper->is_object())
                    throw RequestError(fmt::format("response_format.json_schema must be an object, not {}", type_name(*wrapper)),
                                       "response_format.json_schema");
                // The first of .schema, .json_schema, the object itself (clients send all three shapes);
                // a missing json_schema renders null (k3-chat.md §8).
                if (wrapper) {
                    const Json* schema = member(*wrapper, "schema");
                    if (!truthy(schema)) schema = member(*wrapper, "json_schema");
                    if (!truthy(schema)) schema = wrapper;
                    request.schema = *schema;
                }
            }
        }
    }
    read_effort(body, request, options);
    if (options.measured_image_sizes) {
        request.has_image_sizes = true;
        request.image_sizes = *options.measured_image_sizes;
    } else if (options.render_only_keys) {
        read_render_only_keys(body, request);
    }
    return request;
}

}  // namespace waste::chat
