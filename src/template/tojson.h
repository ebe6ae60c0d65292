// tojson.h — Python's json.dumps over template values, as Hugging Face
// transformers defines its tojson filter: json.dumps(x, ensure_ascii=False,
// indent=None, separators=None, sort_keys=False) by default, each settable.
// Floats are Python's repr (NaN, Infinity as json.dumps writes them);
// tuples are arrays; Undefined, namespaces and callables are an error, as
// "not JSON serializable" is in Python.
//
// Deliberately not here: parsing JSON into values (value.h, from_json).
#pragma once

#include <optional>
#include <string>

#include "template/value.h"

namespace waste::tmpl {

struct JsonStyle {
    bool ensure_ascii = false;
    std::optional<std::string> indent;  // json.dumps indent: an int n is n spaces; None is one line
    std::string item_separator = ", ";
    std::string key_separator = ": ";
    bool sort_keys = false;
};

std::string to_json(const Value& value, const JsonStyle& style, size_t max_bytes);
std::string json_quote(std::string_view text, bool ensure_ascii);

}  // namespace waste::tmpl
