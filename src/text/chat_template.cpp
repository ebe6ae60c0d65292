#include "text/chat_template.h"

#include <nlohmann/json.hpp>

#include "platform/error.h"

namespace waste::text {

ChatTemplate ChatTemplate::parse(std::string_view json_text, const std::string& source) {
    if (json_text.size() > max_chat_file_bytes)
        fail(WASTE_ERR_FORMAT, "{}: {} bytes, more than the {} allowed", source, json_text.size(), max_chat_file_bytes);
    nlohmann::json root;
    try {
        root = nlohmann::json::parse(json_text);
    } catch (const nlohmann::json::exception& e) {
        fail(WASTE_ERR_FORMAT, "{}: not JSON: {}", source, e.what());
    }
    if (!root.is_object()) fail(WASTE_ERR_FORMAT, "{}: must be a JSON object, got {}", source, root.type_name());
    ChatTemplate result;
    for (const auto& [key, value] : root.items()) {
        if (key == "open") {
            if (!value.is_string()) fail(WASTE_ERR_FORMAT, "{}: \"open\" must be a string, got {}", source, value.type_name());
            result.open_ = value.get<std::string>();
            continue;
        }
        if (!value.is_array() || value.size() != 2 || !value[0].is_string() || !value[1].is_string())
            fail(WASTE_ERR_FORMAT, "{}: role \"{}\" must be [prefix, suffix] (two strings), got {}", source, key,
                 value.dump().substr(0, 80));
        result.roles_[key] = {value[0].get<std::string>(), value[1].get<std::string>()};
    }
    if (!root.contains("open")) fail(WASTE_ERR_FORMAT, "{}: has no \"open\" (the markup that starts the answer)", source);
    for (const char* required : {"user", "assistant"})
        if (!result.has_role(required)) fail(WASTE_ERR_FORMAT, "{}: has no \"{}\" role", source, required);
    return result;
}

const std::pair<std::string, std::string>& ChatTemplate::role(std::string_view role) const {
    const auto found = roles_.find(std::string(role));
    if (found == roles_.end()) {
        std::string known;
        for (const auto& name : role_names()) known += (known.empty() ? "" : ", ") + name;
        fail(WASTE_ERR_INVALID_ARGUMENT, "chat template has no role \"{}\" (it has: {})", role, known);
    }
    return found->second;
}

std::vector<std::string> ChatTemplate::role_names() const {
    std::vector<std::string> names;
    for (const auto& entry : roles_) names.push_back(entry.first);
    return names;
}

void ChatTemplate::encode_turn(const Tokenizer& tokenizer, std::string_view role_name, std::string_view content,
                               std::vector<int32_t>& out) const {
    const auto& [prefix, suffix] = role(role_name);
    tokenizer.encode(prefix, true, out);
    tokenizer.encode(content, false, out);
    tokenizer.encode(suffix, true, out);
}

void ChatTemplate::encode_open(const Tokenizer& tokenizer, std::vector<int32_t>& out) const {
    tokenizer.encode(open_, true, out);
}

}  // namespace waste::text
