// response_format.h — what a chat request's `response_format` asks the
// reply to be, as a grammar for the engine (k3-chat.md §8): `json_object`
// is any JSON object, `json_schema` the schema found as §8 finds it (the
// first of json_schema.schema, json_schema.json_schema, or the json_schema
// object itself). `text` or no response_format: no grammar, and nothing in
// the generation changes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace waste_serve {

struct OutputGrammar {
    uint32_t kind = 0;  // a waste_grammar_kind
    std::string text;   // the schema's JSON text, keys in the client's order
};

// request: the parsed body; body: its text, re-read with the keys in order
// when there is a schema (properties are written in the schema's order, and
// the server's parse sorts keys). Throws ApiError (400, param
// "response_format") for an unknown type or a json_schema without one.
std::optional<OutputGrammar> read_response_format(const nlohmann::json& request, const std::string& body);

}  // namespace waste_serve
