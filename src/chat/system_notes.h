// system_notes.h — the fixed English texts K3's prompts carry (k3-chat.md
// §6, §7): the tool-declaration preambles and the system notes. They are
// the prompt text the model was trained on, byte for byte (line breaks are
// "\n", none at the end).
//
// Deliberately not here: where the notes go (xtml_render.cpp).
#pragma once

#include <string>
#include <string_view>

#include "chat/xtml_json.h"

namespace waste::chat {

inline constexpr const char* tools_preamble =
    "# Tools\n"
    "Here are the available tools, described in JSONSchema.\n"
    "\n";

inline constexpr const char* lazy_tools_preamble =
    "## New Tools Available\n"
    "The system dynamically extends the toolset via lazy-loading.\n"
    "You have access to all existing and extended tools.\n"
    "Here are the specs for the extended tools.\n"
    "\n";

inline constexpr const char* tool_choice_required_note =
    "The system is invoked with `tool_choice=required`.\n"
    "You MUST call tools in the next message.";

inline constexpr const char* tool_choice_none_note =
    "The system is invoked with `tool_choice=none`.\n"
    "You MUST NOT call any tools in the next message.";

inline constexpr const char* json_object_note =
    "The system is invoked with `response_format=json_object`.\n"
    "Your response must be raw JSON data without markdown code blocks (```json) or any additional formatting.";

// effort: low, high or max.
std::string thinking_effort_note(std::string_view effort);
// The schema per §6 (sorted, compact).
std::string json_schema_note(const Json& schema);
// tool_choice {"type": "function", "function": {"name": X}}: K3 has no
// such note; this wording is ours (§8 allows it), modelled on "required".
std::string tool_choice_named_note(std::string_view name);

}  // namespace waste::chat
