// chat_jinja.cpp — `waste chat` through a Jinja chat template (see chat_jinja.h).
#include "chat_jinja.h"

#include <algorithm>

#include <fmt/format.h>

#include "cli_common.h"

namespace waste_cli {

using Json = nlohmann::ordered_json;

std::unique_ptr<JinjaChat> JinjaChat::open(const waste_model* model, const std::string& template_text, std::string& why) {
    auto chat = std::unique_ptr<JinjaChat>(new JinjaChat());
    chat->model_ = model;
    Json options = {{"thinking", true}};
    if (!template_text.empty()) options["chat_template"] = template_text;
    chat->options_ = options.dump();
    chat->add("user", "hello");
    std::string nothing_renders;
    const Json probe = chat->render(&nothing_renders);
    if (probe.is_null()) {  // no template and no chat.json
        why = nothing_renders;
        return nullptr;
    }
    if (probe.value("format", "") != "jinja") {
        why = fmt::format("the model renders chats as {}, not through a Jinja template", probe.value("format", "?"));
        return nullptr;
    }
    chat->stop_ids_ = probe.at("stop_ids").get<std::vector<int32_t>>();
    chat->clear();
    return chat;
}

void JinjaChat::add(const std::string& role, const std::string& content) { messages_.push_back({{"role", role}, {"content", content}}); }

bool JinjaChat::restore(const Json& messages, std::string& why) {
    if (!messages.is_array()) {
        why = "'messages' is not a list";
        return false;
    }
    for (size_t i = 0; i < messages.size(); ++i) {
        const Json& m = messages[i];
        const bool role_ok = m.is_object() && m.contains("role") && m["role"].is_string() &&
                             (m["role"] == "system" || m["role"] == "user" || m["role"] == "assistant");
        if (!role_ok || !m.contains("content") || !m["content"].is_string() || m.size() != 2) {
            why = fmt::format("message {} is not a role (system, user or assistant) and a text", i);
            return false;
        }
    }
    messages_ = messages;
    return true;
}

Json JinjaChat::render(std::string* no_chat_format) const {
    const std::string body = Json{{"messages", messages_}}.dump(-1, ' ', false, Json::error_handler_t::replace);
    char* out = nullptr;
    waste_error error{};
    const waste_status status = waste_chat_render_json(model_, body.data(), body.size(), options_.c_str(), &out, &error);
    std::string text = out ? take_string(out) : std::string();
    if (status != WASTE_OK) {
        // The refusal's own object says whether the model has no chat format
        // at all (a probe's answer, not a failure) or the template refused.
        const Json refusal = Json::parse(text, nullptr, false);
        if (no_chat_format && refusal.is_object() && refusal.value("code", Json()) == "no_chat_format") {
            *no_chat_format = error.message;
            return Json();
        }
        throw RuntimeFailure{fmt::format("the chat template refused the conversation: {}", error.message)};
    }
    return Json::parse(text);
}

JinjaChat::Prompt JinjaChat::prompt(const std::vector<int32_t>& held) const {
    Prompt prompt;
    prompt.whole = render().at("ids").get<std::vector<int32_t>>();
    // a prompt the session already holds whole still needs its last token evaluated: start over
    const bool extends = held.size() < prompt.whole.size() && std::equal(held.begin(), held.end(), prompt.whole.begin());
    prompt.start_over = !extends;
    prompt.ids.assign(prompt.whole.begin() + static_cast<long>(extends ? held.size() : 0), prompt.whole.end());
    return prompt;
}

}  // namespace waste_cli
