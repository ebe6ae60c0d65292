// globals.h — the callables a template can reach by name: Jinja2's globals
// (range with the sandbox's 100,000 cap, namespace, dict), transformers'
// raise_exception and strftime_now, and the macro and caller objects that
// {% macro %} and {% call %} define.
//
// Deliberately not here: filters and tests (filters.h), bound methods of
// values (methods.h). cycler, joiner and lipsum are not provided (using one
// is an undefined-call error).
#pragma once

#include "template/ast.h"
#include "template/evaluator.h"

namespace waste::tmpl {

void install_globals(Scope& globals);
Value make_macro(const Stmt& definition, const ScopePtr& defining_scope);
Value make_caller(const Stmt& call_block, const ScopePtr& call_scope);

}  // namespace waste::tmpl
