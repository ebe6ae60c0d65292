// chat_jinja.h — `waste chat` through a Jinja chat template: the
// container's when it has no chat.json, or --chat-template FILE. Each turn
// the whole conversation is rendered by waste_chat_render_json (the
// server's path, content kept out of control tokens); the session keeps
// what it holds when the new prompt starts with exactly those ids (the
// usual case), and starts over otherwise (a template that re-renders
// history, e.g. Qwen3 dropping past reasoning, or a reply whose text
// re-encodes to other ids).
//
// Deliberately not here: the terminal loop (cmd_chat.cpp), reading replies
// into reasoning and tool calls (the reply parsers).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "waste/waste.h"

namespace waste_cli {

class JinjaChat {
public:
    // Null when the model does not render through a Jinja template (XTML,
    // chat.json, or nothing at all); `why` then says so. A template that
    // cannot render a one-line conversation is a RuntimeFailure.
    static std::unique_ptr<JinjaChat> open(const waste_model* model, const std::string& template_text, std::string& why);

    void clear() { messages_ = nlohmann::ordered_json::array(); }
    void add(const std::string& role, const std::string& content);
    void drop_last() {
        if (!messages_.empty()) messages_.erase(messages_.end() - 1);
    }
    bool empty() const { return messages_.empty(); }
    // The conversation as /save writes it beside the session's state.
    const nlohmann::ordered_json& messages() const { return messages_; }
    // /load: takes a list of messages, each a role (system, user or
    // assistant) and a string content; anything else is refused (why
    // filled) and the conversation is left as it was.
    bool restore(const nlohmann::ordered_json& messages, std::string& why);

    struct Prompt {
        bool start_over = false;     // reset the session, then evaluate `ids`
        std::vector<int32_t> ids;    // what to evaluate after what the session holds
        std::vector<int32_t> whole;  // the whole prompt
    };
    // The conversation with a generation prompt, against the ids the session
    // holds. A refusal (raise_exception, a template error) is a RuntimeFailure.
    Prompt prompt(const std::vector<int32_t>& held) const;
    const std::vector<int32_t>& stop_ids() const { return stop_ids_; }

private:
    // A refusal is a RuntimeFailure, except that with no_chat_format given,
    // a model with no chat format at all returns null and the reason there.
    nlohmann::ordered_json render(std::string* no_chat_format = nullptr) const;
    const waste_model* model_ = nullptr;
    std::string options_;
    nlohmann::ordered_json messages_ = nlohmann::ordered_json::array();
    std::vector<int32_t> stop_ids_;
};

}  // namespace waste_cli
