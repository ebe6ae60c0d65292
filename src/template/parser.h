// parser.h — tokens to a ParsedTemplate, with Jinja2's grammar and operator
// precedence (filters bind tighter than any binary operator; `not` looser
// than comparisons; inline if/else loosest). Statements: if/elif/else, for
// (tuple targets, loop filter, else), set (tuple unpacking, namespace
// attribute, block set), macro, call, filter, break, continue.
//
// A filter or test this engine lacks is an error at parse time, except
// inside an if or an inline if, where Jinja2 too defers it to run time.
// Every other statement (extends, block, include, import, with, raw...) is
// an error naming its line. Nesting is bounded.
//
// Deliberately not here: evaluation (evaluator.h).
#pragma once

#include <string>
#include <vector>

#include "template/ast.h"
#include "template/lexer.h"

namespace waste::tmpl {

ParsedTemplate parse(std::vector<Token> tokens, const std::string& template_name);

}  // namespace waste::tmpl
