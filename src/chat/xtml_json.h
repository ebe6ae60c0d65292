// xtml_json.h — the JSON text K3's prompts carry, byte for byte as Python's
// json.dumps writes it (k3-chat.md §5.4, §6), and bounded parsing of
// request JSON.
//
// Two forms: the tool declaration and response-format schema are
// sort_keys=True with separators (",", ":") ("declaration"); tool-call
// argument values keep the object's own key order with ", " and ": "
// ("argument"). Both write non-ASCII as itself (ensure_ascii=False), escape
// only what Python escapes, and print numbers as Python does: integers in
// full, floats as repr() (shortest round-trip digits, ".0" when integral,
// exponent form below 1e-4 and from 1e16: 1e-05, 1e+16).
//
// The integer/float distinction survives because nlohmann keeps it
// (number_integer/number_unsigned vs number_float). Deliberately not here:
// integers beyond 64 bits (nlohmann reads them as floats; Python would keep
// them whole) — a known, documented difference.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace waste::chat {

using Json = nlohmann::ordered_json;

enum class JsonForm {
    declaration,  // keys sorted, compact: {"a":1,"b":[1,2]}
    argument      // key order kept, spaced: {"b": [1, 2], "a": 1}
};

std::string python_json_dumps(const Json& value, JsonForm form);
// repr() of a finite double: "1.0", "1e-05", "1.5e+300", "-0.0".
std::string python_float_repr(double value);

// Why 64: OpenAI requests nest a handful of levels (a JSON schema inside a
// tool inside tools); 64 leaves room for deep schemas, and bounds every
// recursive walk over the parsed value.
inline constexpr size_t max_json_depth = 64;

// The nesting depth of JSON text (brackets outside strings), stopping early
// once it exceeds limit; cheap and without recursion, so it can be run on
// hostile text before a parser sees it.
size_t json_text_depth(std::string_view text, size_t limit);

// Parses text as JSON, keeping key order (a repeated key keeps its first
// place and its last value, as Python's json.loads does). Returns false
// (and leaves out untouched) when the text is not JSON or nests deeper than
// max_json_depth; why says which.
bool parse_json_bounded(std::string_view text, Json& out, std::string* why = nullptr);

// Python's str.isspace() over a whole UTF-8 string (empty counts as blank):
// the whitespace test K3's encoder applies to reasoning and arguments.
bool is_blank(std::string_view text);

}  // namespace waste::chat
