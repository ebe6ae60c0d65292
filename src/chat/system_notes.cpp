// system_notes.cpp — the notes whose text depends on the request (see system_notes.h).
#include "chat/system_notes.h"

namespace waste::chat {

std::string thinking_effort_note(std::string_view effort) {
    return "`thinking_effort` guides on how much to think in your thinking channel (not including the response channel), "
           "supported values include `low`, `medium`, `high`, and `max`.\n"
           "Now the system is invoked with `thinking_effort=" +
           std::string(effort) + "`.";
}

std::string json_schema_note(const Json& schema) {
    return "The system is invoked with `response_format=json_schema`.\n"
           "Your response must be raw JSON data without markdown code blocks (```json) or any additional formatting.\n"
           "The JSON data must match the following schema:\n"
           "```json\n" +
           python_json_dumps(schema, JsonForm::declaration) + "\n```";
}

std::string tool_choice_named_note(std::string_view name) {
    return "The system is invoked with `tool_choice=required`.\n"
           "You MUST call the tool `" +
           std::string(name) + "` in the next message.";
}

}  // namespace waste::chat
