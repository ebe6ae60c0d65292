// frame_analysis.h — one of Jinja2's compile-time scoping rules, which
// changes output: at the top level of a template, a name whose first
// top-level mention is an unconditional assignment ({% set x = ... %},
// {% set x %}, {% macro x %}) is Undefined from the start of the render,
// whatever the context holds, until that assignment runs. A for loop or
// macro that reads it earlier sees Undefined (Jinja2 binds the top-level
// variable before any code runs; only a top-level read before the
// assignment makes it resolve from the context instead).
//
// Deliberately not here: the same rule inside loop and macro bodies, where
// Jinja2 aliases an enclosing frame's variable when one exists; there this
// engine reads the enclosing value, which is what real templates rely on.
#pragma once

#include <string>
#include <vector>

#include "template/ast.h"

namespace waste::tmpl {

std::vector<std::string> names_undefined_at_start(const Body& root);

// Whether a body may change state a loop filter could read: it assigns a
// namespace attribute or calls anything (a macro, list.pop ...). Jinja2
// evaluates `for x in xs if cond` lazily, item by item, while this engine
// filters before the first iteration; the parser refuses the combination
// rather than risk a different result.
bool body_may_change_state(const Body& body);

}  // namespace waste::tmpl
