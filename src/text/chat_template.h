// chat_template.h — a container's chat.json (container-v0 §6) and the
// tokens of chat turns built from it.
//
// chat.json: {"system": [prefix, suffix], "user": [..], "assistant": [..],
// "open": "..."}; any further role is another [prefix, suffix] pair. A turn
// is prefix + content + suffix; "open" starts the assistant's answer.
// The prefix, suffix and open markup are encoded in markup mode (their
// specials become control tokens) and the content in plain mode, each
// segment separately (models.md §9): a user who types "<|open|>" gets the
// ordinary bytes, never the control token.
//
// Deliberately not here: what a conversation holds (the client keeps it).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "text/tokenizer.h"

namespace waste::text {

inline constexpr uint64_t max_chat_file_bytes = 1ull << 20;  // a template is a few hundred bytes

class ChatTemplate {
public:
    // Parses chat.json's text; errors are WASTE_ERR_FORMAT naming source and the bad key.
    static ChatTemplate parse(std::string_view json_text, const std::string& source);

    bool has_role(std::string_view role) const { return roles_.count(std::string(role)) != 0; }
    // Throws WASTE_ERR_INVALID_ARGUMENT naming a role the template lacks.
    const std::pair<std::string, std::string>& role(std::string_view role) const;
    const std::string& open() const { return open_; }
    std::vector<std::string> role_names() const;

    // Appends prefix (markup) + content (plain) + suffix (markup).
    void encode_turn(const Tokenizer& tokenizer, std::string_view role, std::string_view content,
                     std::vector<int32_t>& out) const;
    // Appends the open markup.
    void encode_open(const Tokenizer& tokenizer, std::vector<int32_t>& out) const;

private:
    std::map<std::string, std::pair<std::string, std::string>> roles_;
    std::string open_;
};

}  // namespace waste::text
