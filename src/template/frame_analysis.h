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

}  // namespace waste::tmpl
