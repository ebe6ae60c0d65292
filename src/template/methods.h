// methods.h — Jinja2's attribute and subscript rules over values, as the
// sandbox applies them: x.name tries the Python attribute first (a method
// such as dict.items or str.strip) then the item; x[key] tries the item
// first then the attribute; a miss is an Undefined that remembers why.
// Methods that would mutate a list or dict (append, update ...) are the
// sandbox's refusals (an error when called); list.pop and list.clear are
// allowed, as in Jinja2's ImmutableSandboxedEnvironment.
//
// Deliberately not here: filters (filters.h), operators (evaluator.h).
#pragma once

#include <optional>
#include <string>

#include "template/value.h"

namespace waste::tmpl {

Value get_attribute(const Value& object, const std::string& name);
Value get_item(const Value& object, const Value& key);
Value slice_value(const Value& object, std::optional<int64_t> start, std::optional<int64_t> stop, std::optional<int64_t> step);

// Python str.split(sep, maxsplit) (sep absent: runs of whitespace).
std::vector<std::string> python_split(const std::string& text, const std::optional<std::string>& separator, int64_t max_split);
std::string python_replace(const std::string& text, const std::string& old, const std::string& replacement, int64_t count);
// str.upper/lower/title/capitalize, ASCII only (non-ASCII letters are an error, not a guess).
std::string python_case(const std::string& text, const std::string& method);

}  // namespace waste::tmpl
