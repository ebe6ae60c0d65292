// filters.h — Jinja2's built-in filters and tests that chat templates use,
// with Jinja2 3.1's argument names and defaults, plus transformers' tojson.
// A name not listed in is_known_filter/is_known_test is an error (at parse
// time, or when run inside an if, as in Jinja2), never a silent pass-through.
//
// Deliberately not here: attribute lookup (methods.h), JSON (tojson.h).
#pragma once

#include <string>

#include "template/value.h"

namespace waste::tmpl {

class Evaluator;

bool is_known_filter(const std::string& name);
bool is_known_test(const std::string& name);
Value apply_filter(Evaluator& evaluator, const std::string& name, const Value& target, CallArgs& args);
bool apply_test(Evaluator& evaluator, const std::string& name, const Value& target, CallArgs& args);

}  // namespace waste::tmpl
