// evaluator.cpp — see evaluator.h.
#include "template/evaluator.h"

#include <cmath>
#include <limits>

#include "platform/error.h"
#include "template/filters.h"
#include "template/globals.h"
#include "template/methods.h"
#include "template/python_text.h"

namespace waste::tmpl {

const Value* Scope::find(std::string_view name) const {
    for (const Scope* scope = this; scope; scope = scope->parent.get())
        for (const auto& [key, value] : scope->variables)
            if (key == name) return &value;
    return nullptr;
}

void Scope::set(const std::string& name, Value value) {
    for (auto& [key, existing] : variables)
        if (key == name) {
            existing = std::move(value);
            return;
        }
    variables.emplace_back(name, std::move(value));
}

[[noreturn]] void fail_undefined(const Value& undefined) {
    const auto& info = undefined.undefined_info();
    fail(info.unsupported ? WASTE_ERR_UNSUPPORTED : WASTE_ERR_INVALID_ARGUMENT, "{}", info.hint);
}

void Evaluator::check_string_size(size_t bytes) const {
    if (bytes > options_.limits.max_output_bytes)
        fail(WASTE_ERR_INVALID_ARGUMENT, "a string of {} bytes is more than the limit of {}", bytes, options_.limits.max_output_bytes);
}

void Evaluator::check_list_size(size_t items) const {
    if (items > options_.limits.max_list_items)
        fail(WASTE_ERR_INVALID_ARGUMENT, "a list of {} items is more than the limit of {}", items, options_.limits.max_list_items);
}

void Evaluator::step() {
    if (++steps_ > options_.limits.max_steps)
        fail(WASTE_ERR_INVALID_ARGUMENT, "the template ran more than {} steps", options_.limits.max_steps);
}

void Evaluator::append(std::string& out, std::string_view text) const {
    if (out.size() + text.size() > options_.limits.max_output_bytes)
        fail(WASTE_ERR_INVALID_ARGUMENT, "the output would be more than the limit of {} bytes", options_.limits.max_output_bytes);
    out.append(text);
}

std::vector<Value> iterate(const Value& value) {
    switch (value.kind()) {
    case Value::Kind::list: return value.items();
    case Value::Kind::dict: {
        if (value.as_dict().loop_object) fail(WASTE_ERR_INVALID_ARGUMENT, "'LoopContext' object is not iterable");
        std::vector<Value> keys;
        keys.reserve(value.as_dict().items.size());
        for (const auto& [key, item] : value.as_dict().items) keys.push_back(Value::string(key));
        return keys;
    }
    case Value::Kind::string: {
        std::vector<Value> characters;
        const auto points = decode_utf8(value.as_string());
        for (size_t i = 0; i < points.size(); ++i) characters.push_back(Value::string(encode_utf8(points, i, i + 1)));
        return characters;
    }
    case Value::Kind::undefined:
        if (value.undefined_info().unsupported) fail_undefined(value);
        return {};
    default: fail(WASTE_ERR_INVALID_ARGUMENT, "'{}' object is not iterable", type_name(value));
    }
}

bool contains(const Value& container, const Value& item) {
    switch (container.kind()) {
    case Value::Kind::string:
        if (!item.is_string())
            fail(WASTE_ERR_INVALID_ARGUMENT, "'in <string>' requires string as left operand, not {}", type_name(item));
        return container.as_string().find(item.as_string()) != std::string::npos;
    case Value::Kind::list:
        for (const auto& element : container.items())
            if (equals(element, item)) return true;
        return false;
    case Value::Kind::dict:
        if ((item.is_list() && !item.is_tuple()) || item.is_dict())
            fail(WASTE_ERR_INVALID_ARGUMENT, "unhashable type: '{}'", type_name(item));
        return item.is_string() && container.as_dict().find(item.as_string()) != nullptr;
    case Value::Kind::undefined:
        if (container.undefined_info().unsupported) fail_undefined(container);
        return false;
    default: fail(WASTE_ERR_INVALID_ARGUMENT, "argument of type '{}' is not iterable", type_name(container));
    }
}

int compare_values(const Value& a, const Value& b) {
    if (a.is_undefined()) fail_undefined(a);
    if (b.is_undefined()) fail_undefined(b);
    if (a.is_number() && b.is_number()) {
        if (a.is_float() || b.is_float()) {
            const double x = a.as_float(), y = b.as_float();
            return x < y ? -1 : x > y ? 1 : 0;
        }
        return a.as_int() < b.as_int() ? -1 : a.as_int() > b.as_int() ? 1 : 0;
    }
    if (a.is_string() && b.is_string()) {
        const int c = a.as_string().compare(b.as_string());  // UTF-8 byte order is code point order
        return c < 0 ? -1 : c > 0 ? 1 : 0;
    }
    if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
        const auto &x = a.items(), &y = b.items();
        for (size_t i = 0; i < x.size() && i < y.size(); ++i)
            if (!equals(x[i], y[i])) return compare_values(x[i], y[i]);
        return x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0;
    }
    fail(WASTE_ERR_INVALID_ARGUMENT, "'<' not supported between instances of '{}' and '{}'", type_name(a), type_name(b));
}

namespace {

int64_t checked(bool overflow, int64_t value, const char* op) {
    if (overflow) fail(WASTE_ERR_UNSUPPORTED, "integer overflow in '{}' (Python's big integers are not supported)", op);
    return value;
}

// CPython's float_divmod, step for step (signs of zero included).
std::pair<double, double> python_float_divmod(double a, double b) {
    double mod = std::fmod(a, b);
    double div = (a - mod) / b;
    if (mod != 0) {
        if ((b < 0) != (mod < 0)) {
            mod += b;
            div -= 1.0;
        }
    } else {
        mod = std::copysign(0.0, b);
    }
    double floor_div;
    if (div != 0) {
        floor_div = std::floor(div);
        if (div - floor_div > 0.5) floor_div += 1.0;
    } else {
        floor_div = std::copysign(0.0, a / b);
    }
    return {floor_div, mod};
}

// Markup + str escapes the str (markupsafe), as Jinja2's `safe` output does.
std::string markup_escape(const std::string& text) {
    std::string out;
    for (char c : text) {
        switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '\'': out += "&#39;"; break;
        case '"': out += "&#34;"; break;
        default: out.push_back(c);
        }
    }
    return out;
}

}  // namespace

Value binary_operation(Evaluator& evaluator, const std::string& op, const Value& left, const Value& right) {
    if (op == "~") {
        std::string text = python_str(left);
        const std::string tail = python_str(right);
        evaluator.check_string_size(text.size() + tail.size());
        return Value::string(text + tail);
    }
    if (op == "%" && left.is_string()) fail(WASTE_ERR_UNSUPPORTED, "string formatting with '%' is not supported");
    if (left.is_undefined()) fail_undefined(left);
    if (right.is_undefined()) fail_undefined(right);
    auto type_error = [&]() -> Value {
        fail(WASTE_ERR_INVALID_ARGUMENT, "unsupported operand type(s) for {}: '{}' and '{}'", op, type_name(left), type_name(right));
    };
    const bool numbers = left.is_number() && right.is_number();
    const bool floats = numbers && (left.is_float() || right.is_float());
    if (op == "+") {
        if (floats) return Value::floating(left.as_float() + right.as_float());
        if (numbers) {
            int64_t r = 0;
            const bool overflow = __builtin_add_overflow(left.as_int(), right.as_int(), &r);
            return Value::integer(checked(overflow, r, "+"));
        }
        if (left.is_string() && right.is_string()) {
            const bool markup = left.is_markup() || right.is_markup();
            std::string a = left.as_string(), b = right.as_string();
            if (markup && !left.is_markup()) a = markup_escape(a);
            if (markup && !right.is_markup()) b = markup_escape(b);
            evaluator.check_string_size(a.size() + b.size());
            return Value::string(a + b, markup);
        }
        if (left.is_list() && right.is_list() && left.is_tuple() == right.is_tuple() && !left.view() && !right.view()) {
            evaluator.check_list_size(left.items().size() + right.items().size());
            std::vector<Value> items = left.items();
            items.insert(items.end(), right.items().begin(), right.items().end());
            return Value::list(std::move(items), left.is_tuple());
        }
        return type_error();
    }
    if (op == "*") {
        if (floats) return Value::floating(left.as_float() * right.as_float());
        if (numbers) {
            int64_t r = 0;
            const bool overflow = __builtin_mul_overflow(left.as_int(), right.as_int(), &r);
            return Value::integer(checked(overflow, r, "*"));
        }
        const Value* sequence = left.is_string() || left.is_list() ? &left : right.is_string() || right.is_list() ? &right : nullptr;
        const Value* count = sequence == &left ? &right : &left;
        if (!sequence || !count->is_number() || count->is_float()) return type_error();
        const int64_t times = std::max<int64_t>(0, count->as_int());
        if (sequence->is_string()) {
            const auto& text = sequence->as_string();
            if (!text.empty()) evaluator.check_string_size(static_cast<size_t>(std::min<int64_t>(times, INT64_MAX / 2 / static_cast<int64_t>(text.size()))) * text.size());
            std::string out;
            for (int64_t i = 0; i < times; ++i) out += text;
            return Value::string(std::move(out), sequence->is_markup());
        }
        const auto& items = sequence->items();
        if (!items.empty()) evaluator.check_list_size(static_cast<size_t>(std::min<int64_t>(times, INT64_MAX / 2 / static_cast<int64_t>(items.size()))) * items.size());
        std::vector<Value> out;
        for (int64_t i = 0; i < times; ++i) out.insert(out.end(), items.begin(), items.end());
        return Value::list(std::move(out), sequence->is_tuple());
    }
    if (!numbers) {
        if (op == "%" && left.is_string()) fail(WASTE_ERR_UNSUPPORTED, "string formatting with '%' is not supported");
        return type_error();
    }
    if (op == "-") {
        if (floats) return Value::floating(left.as_float() - right.as_float());
        int64_t r = 0;
        const bool overflow = __builtin_sub_overflow(left.as_int(), right.as_int(), &r);
        return Value::integer(checked(overflow, r, "-"));
    }
    if (op == "/") {
        if (right.as_float() == 0) fail(WASTE_ERR_INVALID_ARGUMENT, "division by zero");
        return Value::floating(left.as_float() / right.as_float());
    }
    if (op == "//" || op == "%") {
        if (right.as_float() == 0) fail(WASTE_ERR_INVALID_ARGUMENT, "integer division or modulo by zero");
        if (floats) {
            const auto [floor_div, mod] = python_float_divmod(left.as_float(), right.as_float());
            return Value::floating(op == "%" ? mod : floor_div);
        }
        const int64_t a = left.as_int(), b = right.as_int();
        if (a == std::numeric_limits<int64_t>::min() && b == -1) checked(true, 0, op.c_str());
        int64_t quotient = a / b, remainder = a % b;
        if (remainder != 0 && ((remainder < 0) != (b < 0))) {
            --quotient;
            remainder += b;
        }
        return Value::integer(op == "%" ? remainder : quotient);
    }
    if (op == "**") {
        if (floats || right.as_int() < 0) return Value::floating(std::pow(left.as_float(), right.as_float()));
        int64_t result = 1, base = left.as_int(), exponent = right.as_int();
        while (exponent > 0) {
            if (exponent & 1) checked(__builtin_mul_overflow(result, base, &result), 0, "**");
            exponent >>= 1;
            if (exponent > 0) checked(__builtin_mul_overflow(base, base, &base), 0, "**");
        }
        return Value::integer(result);
    }
    fail(WASTE_ERR_INTERNAL, "unknown operator '{}'", op);
}

Value Evaluator::lookup(const std::string& name, const ScopePtr& scope) {
    if (const Value* value = scope->find(name)) return *value;
    return Value::undefined(fmt::format("'{}' is undefined", name));
}

CallArgs Evaluator::evaluate_args(const Expr& expr, const ScopePtr& scope) {
    CallArgs args;
    args.positional.reserve(expr.args.size());
    for (const auto& arg : expr.args) args.positional.push_back(evaluate(*arg, scope));
    for (const auto& [key, arg] : expr.kwargs) args.keyword.emplace_back(key, evaluate(*arg, scope));
    return args;
}

Value Evaluator::call(const Value& callee, CallArgs& args) {
    if (callee.is_undefined()) fail_undefined(callee);
    if (!callee.is_callable()) fail(WASTE_ERR_INVALID_ARGUMENT, "'{}' object is not callable", type_name(callee));
    step();
    return callee.as_callable().call(*this, args);
}

Value Evaluator::evaluate_binary(const Expr& expr, const ScopePtr& scope) {
    if (expr.name == "and") {
        Value left = evaluate(*expr.children[0], scope);
        return truthy(left) ? evaluate(*expr.children[1], scope) : left;
    }
    if (expr.name == "or") {
        Value left = evaluate(*expr.children[0], scope);
        return truthy(left) ? left : evaluate(*expr.children[1], scope);
    }
    const Value left = evaluate(*expr.children[0], scope);
    const Value right = evaluate(*expr.children[1], scope);
    line_ = expr.line;
    return binary_operation(*this, expr.name, left, right);
}

Value Evaluator::evaluate_compare(const Expr& expr, const ScopePtr& scope) {
    Value left = evaluate(*expr.children[0], scope);
    for (size_t i = 0; i < expr.operators.size(); ++i) {
        Value right = evaluate(*expr.children[i + 1], scope);
        const std::string& op = expr.operators[i];
        line_ = expr.line;
        bool result;
        if (op == "==") result = equals(left, right);
        else if (op == "!=") result = !equals(left, right);
        else if (op == "in") result = contains(right, left);
        else if (op == "not in") result = !contains(right, left);
        else {
            const int c = compare_values(left, right);
            result = op == "<" ? c < 0 : op == "<=" ? c <= 0 : op == ">" ? c > 0 : c >= 0;
        }
        if (!result) return Value::boolean(false);
        left = std::move(right);
    }
    return Value::boolean(true);
}

Value Evaluator::evaluate_filter(const Expr& expr, const Value& target, const ScopePtr& scope) {
    CallArgs args = evaluate_args(expr, scope);
    line_ = expr.line;
    if (!expr.known) fail(WASTE_ERR_INVALID_ARGUMENT, "no filter named '{}'", expr.name);
    return apply_filter(*this, expr.name, target, args);
}

Value Evaluator::evaluate(const Expr& expr, const ScopePtr& scope) {
    line_ = expr.line;
    switch (expr.kind) {
    case ExprKind::constant: return expr.value;
    case ExprKind::name: return lookup(expr.name, scope);
    case ExprKind::list: {
        std::vector<Value> items;
        items.reserve(expr.children.size());
        for (const auto& child : expr.children) items.push_back(evaluate(*child, scope));
        return Value::list(std::move(items), expr.is_tuple);
    }
    case ExprKind::dict: {
        DictData dict;
        for (size_t i = 0; i + 1 < expr.children.size(); i += 2) {
            Value key = evaluate(*expr.children[i], scope);
            if (!key.is_string()) fail(WASTE_ERR_UNSUPPORTED, "dict keys of type '{}' are not supported", type_name(key));
            dict.set(key.as_string(), evaluate(*expr.children[i + 1], scope));
        }
        return Value::dict(std::move(dict));
    }
    case ExprKind::getattr: {
        const Value object = evaluate(*expr.children[0], scope);
        line_ = expr.line;
        return get_attribute(object, expr.name);
    }
    case ExprKind::getitem: {
        const Value object = evaluate(*expr.children[0], scope);
        const Value key = evaluate(*expr.children[1], scope);
        line_ = expr.line;
        return get_item(object, key);
    }
    case ExprKind::slice: {
        const Value object = evaluate(*expr.children[0], scope);
        std::optional<int64_t> parts[3];
        for (int i = 0; i < 3; ++i) {
            if (!expr.children[i + 1]) continue;
            const Value part = evaluate(*expr.children[i + 1], scope);
            if (part.is_none()) continue;
            if (!part.is_int() && !part.is_bool())  // Jinja2's getitem turns the TypeError into an Undefined
                return Value::undefined(fmt::format("slice indices must be integers or None, not {}", type_name(part)));
            parts[i] = part.as_int();
        }
        line_ = expr.line;
        return slice_value(object, parts[0], parts[1], parts[2]);
    }
    case ExprKind::call: {
        const Value callee = evaluate(*expr.children[0], scope);
        CallArgs args = evaluate_args(expr, scope);
        line_ = expr.line;
        return call(callee, args);
    }
    case ExprKind::filter: return evaluate_filter(expr, evaluate(*expr.children[0], scope), scope);
    case ExprKind::test: {
        const Value target = evaluate(*expr.children[0], scope);
        CallArgs args = evaluate_args(expr, scope);
        line_ = expr.line;
        if (!expr.known) fail(WASTE_ERR_INVALID_ARGUMENT, "no test named '{}'", expr.name);
        return Value::boolean(apply_test(*this, expr.name, target, args) != expr.negated);
    }
    case ExprKind::unary: {
        const Value operand = evaluate(*expr.children[0], scope);
        line_ = expr.line;
        if (expr.name == "not") return Value::boolean(!truthy(operand));
        if (operand.is_undefined()) fail_undefined(operand);
        if (!operand.is_number()) fail(WASTE_ERR_INVALID_ARGUMENT, "bad operand type for unary {}: '{}'", expr.name, type_name(operand));
        if (operand.is_float()) return Value::floating(expr.name == "-" ? -operand.as_float() : operand.as_float());
        if (expr.name == "-" && operand.as_int() == std::numeric_limits<int64_t>::min()) checked(true, 0, "-");
        return Value::integer(expr.name == "-" ? -operand.as_int() : operand.as_int());
    }
    case ExprKind::binary: return evaluate_binary(expr, scope);
    case ExprKind::compare: return evaluate_compare(expr, scope);
    case ExprKind::conditional: {
        if (truthy(evaluate(*expr.children[0], scope))) return evaluate(*expr.children[1], scope);
        if (expr.children[2]) return evaluate(*expr.children[2], scope);
        return Value::undefined("the inline if-expression evaluated to false and no else section was defined");
    }
    }
    fail(WASTE_ERR_INTERNAL, "unknown expression kind");
}

void Evaluator::execute_set(const Stmt& stmt, const ScopePtr& scope, const Value& value) {
    if (!stmt.attribute.empty()) {
        const Value target = lookup(stmt.targets[0], scope);
        if (!target.is_namespace()) fail(WASTE_ERR_INVALID_ARGUMENT, "cannot assign attribute on non-namespace object");
        target.namespace_attributes().set(stmt.attribute, value);
        return;
    }
    if (stmt.targets.size() == 1) {
        scope->set(stmt.targets[0], value);
        return;
    }
    const std::vector<Value> items = iterate(value);
    if (items.size() != stmt.targets.size())
        fail(WASTE_ERR_INVALID_ARGUMENT, "cannot unpack {} values into {} names", items.size(), stmt.targets.size());
    for (size_t i = 0; i < items.size(); ++i) scope->set(stmt.targets[i], items[i]);
}

Evaluator::Flow Evaluator::execute_for(const Stmt& stmt, const ScopePtr& scope, std::string& out) {
    const Value iterable = evaluate(*stmt.expr, scope);
    line_ = stmt.line;
    std::vector<Value> items = iterate(iterable);
    auto bind_targets = [&](Scope& target_scope, const Value& item) {
        if (stmt.targets.size() == 1) {
            target_scope.set(stmt.targets[0], item);
            return;
        }
        const std::vector<Value> parts = iterate(item);
        if (parts.size() != stmt.targets.size())
            fail(WASTE_ERR_INVALID_ARGUMENT, "cannot unpack {} values into {} loop variables", parts.size(), stmt.targets.size());
        for (size_t i = 0; i < parts.size(); ++i) target_scope.set(stmt.targets[i], parts[i]);
    };
    if (stmt.condition) {
        std::vector<Value> kept;
        for (const auto& item : items) {
            step();
            auto test_scope = std::make_shared<Scope>();
            test_scope->parent = scope;
            bind_targets(*test_scope, item);
            if (truthy(evaluate(*stmt.condition, test_scope))) kept.push_back(item);
        }
        items = std::move(kept);
    }
    const auto length = static_cast<int64_t>(items.size());
    bool completed_an_iteration = false;
    for (int64_t i = 0; i < length; ++i) {
        step();
        auto iteration = std::make_shared<Scope>();
        iteration->parent = scope;
        DictData loop;
        loop.loop_object = true;
        loop.items.reserve(12);
        loop.items.emplace_back("index", Value::integer(i + 1));
        loop.items.emplace_back("index0", Value::integer(i));
        loop.items.emplace_back("revindex", Value::integer(length - i));
        loop.items.emplace_back("revindex0", Value::integer(length - i - 1));
        loop.items.emplace_back("first", Value::boolean(i == 0));
        loop.items.emplace_back("last", Value::boolean(i == length - 1));
        loop.items.emplace_back("length", Value::integer(length));
        loop.items.emplace_back("depth", Value::integer(1));
        loop.items.emplace_back("depth0", Value::integer(0));
        loop.items.emplace_back("previtem", i > 0 ? items[static_cast<size_t>(i - 1)] : Value::undefined("there is no previous item"));
        loop.items.emplace_back("nextitem", i + 1 < length ? items[static_cast<size_t>(i + 1)] : Value::undefined("there is no next item"));
        iteration->variables.emplace_back("loop", Value::dict(std::move(loop)));
        bind_targets(*iteration, items[static_cast<size_t>(i)]);
        const Flow flow = execute(stmt.body, iteration, out);
        if (flow == Flow::normal) completed_an_iteration = true;
        if (flow == Flow::break_loop) break;
    }
    // Jinja2 runs the else block unless an iteration reached the end of the
    // body: with no items, but also when every iteration ended in break or continue.
    if (!completed_an_iteration) return execute(stmt.else_body, scope, out);
    return Flow::normal;
}

void Evaluator::render_body(const Body& body, const ScopePtr& scope, std::string& out) {
    if (execute(body, scope, out) != Flow::normal) fail(WASTE_ERR_INVALID_ARGUMENT, "break or continue outside a loop");
}

static ScopePtr child_scope(const ScopePtr& parent) {
    auto child = std::make_shared<Scope>();
    child->parent = parent;
    return child;
}

Evaluator::Flow Evaluator::execute(const Body& body, const ScopePtr& scope, std::string& out) {
    for (const auto& stmt_ptr : body) {
        const Stmt& stmt = *stmt_ptr;
        line_ = stmt.line;
        step();
        switch (stmt.kind) {
        case StmtKind::text: append(out, stmt.text); break;
        case StmtKind::print: {
            const Value value = evaluate(*stmt.expr, scope);
            append(out, python_str(value));
            break;
        }
        case StmtKind::if_: {
            bool taken = false;
            for (size_t i = 0; i < stmt.conditions.size(); ++i) {
                if (truthy(evaluate(*stmt.conditions[i], scope))) {
                    const Flow flow = execute(stmt.bodies[i], scope, out);
                    if (flow != Flow::normal) return flow;
                    taken = true;
                    break;
                }
            }
            if (!taken) {
                const Flow flow = execute(stmt.else_body, scope, out);
                if (flow != Flow::normal) return flow;
            }
            break;
        }
        case StmtKind::for_: {
            // break/continue in a for's else block belong to the loop around it
            const Flow flow = execute_for(stmt, scope, out);
            if (flow != Flow::normal) return flow;
            break;
        }
        case StmtKind::set: execute_set(stmt, scope, evaluate(*stmt.expr, scope)); break;
        case StmtKind::set_block: {
            std::string captured;
            render_body(stmt.body, child_scope(scope), captured);  // sets inside stay inside, as in Jinja2
            Value value = Value::string(std::move(captured));
            for (const auto& filter : stmt.filters) value = evaluate_filter(*filter, value, scope);
            scope->set(stmt.targets[0], std::move(value));
            break;
        }
        case StmtKind::filter_block: {
            std::string captured;
            render_body(stmt.body, child_scope(scope), captured);
            Value value = Value::string(std::move(captured));
            for (const auto& filter : stmt.filters) value = evaluate_filter(*filter, value, scope);
            append(out, python_str(value));
            break;
        }
        case StmtKind::macro: scope->set(stmt.text, make_macro(stmt, scope)); break;
        case StmtKind::call_block: {
            const Expr& call_expr = *stmt.expr;
            const Value callee = evaluate(*call_expr.children[0], scope);
            CallArgs args = evaluate_args(call_expr, scope);
            args.keyword.emplace_back("caller", make_caller(stmt, scope));
            line_ = stmt.line;
            append(out, python_str(call(callee, args)));
            break;
        }
        case StmtKind::break_: return Flow::break_loop;
        case StmtKind::continue_: return Flow::continue_loop;
        }
    }
    return Flow::normal;
}

std::string Evaluator::run(const Value& context) {
    globals_ = std::make_shared<Scope>();
    install_globals(*globals_);
    if (context.is_dict())
        for (const auto& [key, value] : context.as_dict().items) globals_->set(key, deep_copy(value));
    else if (!context.is_undefined() && !context.is_none())
        fail(WASTE_ERR_INVALID_ARGUMENT, "the template context is a {}, not a dict", type_name(context));
    auto root = std::make_shared<Scope>();
    root->parent = globals_;
    for (const auto& name : parsed_.undefined_at_start) root->set(name, Value::undefined(fmt::format("'{}' is undefined", name)));
    struct ReleaseNamespaces {
        std::vector<Value>& namespaces;
        ~ReleaseNamespaces() {
            for (auto& object : namespaces) object.namespace_attributes().items.clear();
            namespaces.clear();
        }
    } release{namespaces_};
    std::string out;
    render_body(parsed_.body, root, out);
    return out;
}

}  // namespace waste::tmpl
