// evaluator.h — runs a ParsedTemplate: scopes (Jinja2's: a for-loop
// iteration and a macro call each see the enclosing names and keep their
// own sets; a top-level set is seen by macros called later), expressions
// with Python's operator semantics, statements, macros and call blocks,
// and the bounds of RenderLimits.
//
// Deliberately not here: filters and tests (filters.h), attributes and
// methods of values (methods.h), JSON (tojson.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "template/ast.h"
#include "template/template.h"
#include "template/value.h"

namespace waste::tmpl {

struct Scope {
    std::vector<std::pair<std::string, Value>> variables;
    std::shared_ptr<Scope> parent;
    const Value* find(std::string_view name) const;
    void set(const std::string& name, Value value);
};
using ScopePtr = std::shared_ptr<Scope>;

// Thrown by raise_exception(); turned into TemplateError{raised} by render().
struct RaisedByTemplate {
    std::string message;
};

class Evaluator {
public:
    Evaluator(const ParsedTemplate& parsed, const RenderOptions& options) : parsed_(parsed), options_(options) {}

    std::string run(const Value& context);

    Value evaluate(const Expr& expr, const ScopePtr& scope);
    Value call(const Value& callee, CallArgs& args);
    // Renders a body into `out` in `scope` (macro bodies, call blocks).
    void render_body(const Body& body, const ScopePtr& scope, std::string& out);

    // Bounds, checked by whoever builds strings and lists.
    void check_string_size(size_t bytes) const;
    void check_list_size(size_t items) const;
    void step();
    const RenderOptions& options() const { return options_; }
    int line() const { return line_; }
    int& call_depth() { return call_depth_; }
    // Namespaces can hold themselves (set ns.me = ns): run() empties every
    // one at the end so such a cycle is freed.
    void register_namespace(const Value& object) { namespaces_.push_back(object); }

private:
    enum class Flow { normal, break_loop, continue_loop };
    Flow execute(const Body& body, const ScopePtr& scope, std::string& out);
    Flow execute_for(const Stmt& stmt, const ScopePtr& scope, std::string& out);
    void execute_set(const Stmt& stmt, const ScopePtr& scope, const Value& value);
    void append(std::string& out, std::string_view text) const;
    Value evaluate_binary(const Expr& expr, const ScopePtr& scope);
    Value evaluate_compare(const Expr& expr, const ScopePtr& scope);
    Value evaluate_filter(const Expr& expr, const Value& target, const ScopePtr& scope);
    CallArgs evaluate_args(const Expr& expr, const ScopePtr& scope);
    Value lookup(const std::string& name, const ScopePtr& scope);

    const ParsedTemplate& parsed_;
    const RenderOptions& options_;
    ScopePtr globals_;
    int line_ = 0;
    int call_depth_ = 0;
    uint64_t steps_ = 0;
    std::vector<Value> namespaces_;
};

// Python's sequence operations the evaluator and filters share.
Value binary_operation(Evaluator& evaluator, const std::string& op, const Value& left, const Value& right);
// Python's a < b (and friends through it): -1, 0, 1; mismatched types are an error.
int compare_values(const Value& a, const Value& b);
bool contains(const Value& container, const Value& item);
// The items a for loop (or list()) visits: list, dict keys, string characters; undefined is empty.
std::vector<Value> iterate(const Value& value);
[[noreturn]] void fail_undefined(const Value& undefined);

}  // namespace waste::tmpl
