// ast.h — the parsed form of a template: expressions and statements, each
// with the source line it came from (errors name it).
//
// Deliberately not here: parsing (parser.h), evaluation (evaluator.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "template/value.h"

namespace waste::tmpl {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

enum class ExprKind : uint8_t {
    constant,   // value
    name,       // name
    list,       // children (tuple when is_tuple)
    dict,       // children: key, value, key, value ...
    getattr,    // children[0].name
    getitem,    // children[0][children[1]]
    slice,      // children[0][a:b:c]: children[1..3] may be null
    call,       // children[0](args)
    filter,     // children[0] | name(args); children[0] null in a filter block
    test,       // children[0] is [not] name(args)
    unary,      // op on children[0]: "-", "+", "not"
    binary,     // children[0] op children[1]: + - * / // % ** ~ and or
    compare,    // children[0] ops[i] children[i+1] ... (chained)
    conditional,  // children[1] if children[0] else children[2] (may be null)
};

struct Expr {
    ExprKind kind;
    int line = 0;
    Value value;                        // constant
    std::string name;                   // name, attribute, filter/test name, operator
    std::vector<ExprPtr> children;
    std::vector<std::string> operators;  // compare
    // Call, filter and test arguments.
    std::vector<ExprPtr> args;
    std::vector<std::pair<std::string, ExprPtr>> kwargs;
    bool negated = false;  // `is not`
    bool is_tuple = false;
    bool known = true;     // a filter or test this engine has (unknown ones fail when evaluated)
    int height = 1;        // 1 + the tallest child or argument (bounded by the parser)
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

enum class StmtKind : uint8_t {
    text,        // text
    print,       // {{ expr }}
    if_,         // conditions[i] -> bodies[i]; else_body
    for_,        // targets in expr [if condition]: body; else_body
    set,         // targets = expr, or attribute_target.attribute = expr
    set_block,   // {% set name %}body{% endset %} with optional filters
    macro,       // name(params=defaults): body
    call_block,  // {% call(params) expr %}body{% endcall %}
    filter_block,  // {% filter f %}body{% endfilter %}
    break_,
    continue_,
};

struct Stmt {
    StmtKind kind;
    int line = 0;
    std::string text;
    ExprPtr expr;
    ExprPtr condition;  // for: loop filter
    std::vector<ExprPtr> conditions;
    std::vector<Body> bodies;
    Body body;
    Body else_body;
    std::vector<std::string> targets;
    std::string attribute;               // set ns.attribute
    std::vector<std::string> params;     // macro / call block
    std::vector<ExprPtr> defaults;       // aligned with params (null = required)
    std::vector<ExprPtr> filters;        // set block / filter block: filter chain applied to the body
    bool uses_caller = false, uses_varargs = false, uses_kwargs = false;
};

struct ParsedTemplate {
    std::string name;
    Body body;
    std::vector<std::string> undefined_at_start;  // frame_analysis.h
};

}  // namespace waste::tmpl
