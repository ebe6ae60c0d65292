// globals.cpp — see globals.h.
#include "template/globals.h"

#include <ctime>
#include <string_view>

#include "platform/error.h"
#include "template/python_text.h"

namespace waste::tmpl {

namespace {

// Jinja2's sandbox refuses ranges longer than this (MAX_RANGE).
constexpr int64_t max_range = 100000;

template <typename Function>
class BuiltinFunction : public Callable {
public:
    BuiltinFunction(std::string name, Function function) : name_(std::move(name)), function_(std::move(function)) {}
    Value call(Evaluator& evaluator, CallArgs& args) override { return function_(evaluator, args); }
    std::string describe() const override { return "function '" + name_ + "'"; }

private:
    std::string name_;
    Function function_;
};

template <typename Function>
Value builtin(std::string name, Function function) {
    return Value::callable(std::make_shared<BuiltinFunction<Function>>(std::move(name), std::move(function)));
}

Value range_function(Evaluator&, CallArgs& args) {
    if (!args.keyword.empty()) fail(WASTE_ERR_INVALID_ARGUMENT, "range() takes no keyword arguments");
    std::vector<int64_t> numbers;
    for (const auto& arg : args.positional) {
        if (arg.is_undefined()) fail_undefined(arg);
        if (!arg.is_int() && !arg.is_bool())
            fail(WASTE_ERR_INVALID_ARGUMENT, "'{}' object cannot be interpreted as an integer", type_name(arg));
        numbers.push_back(arg.as_int());
    }
    if (numbers.empty() || numbers.size() > 3) fail(WASTE_ERR_INVALID_ARGUMENT, "range expected 1 to 3 arguments, got {}", numbers.size());
    const int64_t start = numbers.size() == 1 ? 0 : numbers[0];
    const int64_t stop = numbers.size() == 1 ? numbers[0] : numbers[1];
    const int64_t step = numbers.size() == 3 ? numbers[2] : 1;
    if (step == 0) fail(WASTE_ERR_INVALID_ARGUMENT, "range() arg 3 must not be zero");
    const __int128 span = step > 0 ? static_cast<__int128>(stop) - start : static_cast<__int128>(start) - stop;
    const __int128 magnitude = step > 0 ? step : -static_cast<__int128>(step);
    const __int128 count = span <= 0 ? 0 : (span + magnitude - 1) / magnitude;
    if (count > max_range)
        fail(WASTE_ERR_INVALID_ARGUMENT, "Range too big. The sandbox blocks ranges larger than MAX_RANGE ({}).", max_range);
    std::vector<Value> items;
    items.reserve(static_cast<size_t>(count));
    for (__int128 i = 0; i < count; ++i) items.push_back(Value::integer(static_cast<int64_t>(start + i * step)));
    return Value::list(std::move(items));
}

Value namespace_function(Evaluator& evaluator, CallArgs& args) {
    DictData attributes;
    if (args.positional.size() > 1) fail(WASTE_ERR_INVALID_ARGUMENT, "namespace() takes at most one positional argument");
    if (args.positional.size() == 1) {
        if (!args.positional[0].is_dict()) fail(WASTE_ERR_UNSUPPORTED, "namespace() of a '{}' is not supported", type_name(args.positional[0]));
        attributes = args.positional[0].as_dict();
    }
    for (auto& [key, value] : args.keyword) attributes.set(key, value);
    Value object = Value::namespace_object(std::move(attributes));
    evaluator.register_namespace(object);
    return object;
}

Value dict_function(Evaluator&, CallArgs& args) {
    if (!args.positional.empty()) fail(WASTE_ERR_UNSUPPORTED, "dict() with positional arguments is not supported");
    DictData dict;
    for (auto& [key, value] : args.keyword) dict.set(key, value);
    return Value::dict(std::move(dict));
}

Value raise_exception_function(Evaluator&, CallArgs& args) {
    if (args.positional.size() != 1 || !args.keyword.empty())
        fail(WASTE_ERR_INVALID_ARGUMENT, "raise_exception() takes exactly one argument");
    throw RaisedByTemplate{python_str(args.positional[0])};
}

Value strftime_now_function(Evaluator& evaluator, CallArgs& args) {
    if (args.positional.size() != 1 || !args.keyword.empty() || !args.positional[0].is_string())
        fail(WASTE_ERR_INVALID_ARGUMENT, "strftime_now() takes one format string");
    const std::string& format = args.positional[0].as_string();
    if (format.size() > 256) fail(WASTE_ERR_INVALID_ARGUMENT, "strftime_now(): a format of {} bytes is more than 256", format.size());
    const std::time_t now = evaluator.options().now.value_or(std::time(nullptr));
    std::tm parts{};
#if defined(_WIN32)
    gmtime_s(&parts, &now);
    // The Windows C runtime ends the process on a conversion it does not
    // know (its invalid-parameter handler), so only C's own reach it there;
    // glibc's extensions (%-d, %P, ...) are refused by name instead.
    for (size_t i = 0; i < format.size(); ++i) {
        if (format[i] != '%') continue;
        size_t at = i + 1;
        if (at < format.size() && (format[at] == 'E' || format[at] == 'O')) ++at;
        static constexpr std::string_view standard = "aAbBcCdDeFgGhHIjmMnprRStTuUVwWxXyYzZ%";
        if (at >= format.size() || standard.find(format[at]) == std::string_view::npos)
            fail(WASTE_ERR_INVALID_ARGUMENT, "strftime_now(): format '{}' has a conversion C does not define at byte {}", format, i);
        i = at;
    }
#else
    gmtime_r(&now, &parts);
#endif
    char buffer[1024];
    const size_t length = std::strftime(buffer, sizeof buffer, format.c_str(), &parts);
    if (length == 0 && !format.empty()) fail(WASTE_ERR_INVALID_ARGUMENT, "strftime_now(): format '{}' gave nothing", format);
    return Value::string(std::string(buffer, length));
}

class MacroCallable : public Callable {
public:
    // The scope is held weakly: it holds the macro, and a strong pointer
    // would be a cycle that is never freed.
    MacroCallable(const Stmt& definition, const ScopePtr& scope) : definition_(definition), scope_(scope) {}

    Value call(Evaluator& evaluator, CallArgs& args) override {
        const Stmt& d = definition_;
        if (++evaluator.call_depth() > evaluator.options().limits.max_call_depth)
            fail(WASTE_ERR_INVALID_ARGUMENT, "macro '{}': calls nested deeper than {}", d.text, evaluator.options().limits.max_call_depth);
        struct Leave {
            int& depth;
            ~Leave() { --depth; }
        } leave{evaluator.call_depth()};
        auto local = std::make_shared<Scope>();
        local->parent = scope_.lock();
        if (!local->parent) fail(WASTE_ERR_UNSUPPORTED, "macro '{}' called after the loop that defined it ended", d.text);
        std::vector<bool> bound(d.params.size(), false);
        std::vector<Value> extra_positional;
        for (size_t i = 0; i < args.positional.size(); ++i) {
            if (i < d.params.size()) {
                local->set(d.params[i], args.positional[i]);
                bound[i] = true;
            } else if (d.uses_varargs) {
                extra_positional.push_back(args.positional[i]);
            } else {
                fail(WASTE_ERR_INVALID_ARGUMENT, "macro '{}' takes not more than {} argument(s)", d.text, d.params.size());
            }
        }
        DictData extra_keyword;
        Value caller;
        for (auto& [key, value] : args.keyword) {
            size_t index = d.params.size();
            for (size_t i = 0; i < d.params.size(); ++i)
                if (d.params[i] == key) index = i;
            if (index < d.params.size()) {
                if (bound[index]) fail(WASTE_ERR_INVALID_ARGUMENT, "macro '{}' got multiple values for argument '{}'", d.text, key);
                local->set(key, value);
                bound[index] = true;
            } else if (key == "caller" && d.uses_caller) {
                caller = value;
            } else if (d.uses_kwargs) {
                extra_keyword.set(key, value);
            } else {
                fail(WASTE_ERR_INVALID_ARGUMENT, "macro '{}' takes no keyword argument '{}'", d.text, key);
            }
        }
        for (size_t i = 0; i < d.params.size(); ++i) {
            if (bound[i]) continue;
            if (d.defaults[i]) local->set(d.params[i], evaluator.evaluate(*d.defaults[i], local));
            else local->set(d.params[i], Value::undefined(fmt::format("parameter '{}' was not provided", d.params[i])));
        }
        if (d.uses_varargs) local->set("varargs", Value::list(std::move(extra_positional), true));
        if (d.uses_kwargs) local->set("kwargs", Value::dict(std::move(extra_keyword)));
        if (d.uses_caller) local->set("caller", caller.is_callable() ? caller : Value::undefined("No caller defined"));
        std::string out;
        evaluator.render_body(d.body, local, out);
        return Value::string(std::move(out));
    }
    std::string describe() const override { return "macro '" + definition_.text + "'"; }

private:
    const Stmt& definition_;
    std::weak_ptr<Scope> scope_;
};

class CallerCallable : public Callable {
public:
    CallerCallable(const Stmt& block, ScopePtr scope) : block_(block), scope_(std::move(scope)) {}

    Value call(Evaluator& evaluator, CallArgs& args) override {
        if (!args.keyword.empty()) fail(WASTE_ERR_UNSUPPORTED, "keyword arguments to caller() are not supported");
        if (args.positional.size() > block_.params.size())
            fail(WASTE_ERR_INVALID_ARGUMENT, "caller() takes not more than {} argument(s)", block_.params.size());
        auto local = std::make_shared<Scope>();
        local->parent = scope_;
        for (size_t i = 0; i < block_.params.size(); ++i) {
            if (i < args.positional.size()) local->set(block_.params[i], args.positional[i]);
            else if (block_.defaults[i]) local->set(block_.params[i], evaluator.evaluate(*block_.defaults[i], local));
            else local->set(block_.params[i], Value::undefined(fmt::format("parameter '{}' was not provided", block_.params[i])));
        }
        std::string out;
        evaluator.render_body(block_.body, local, out);
        return Value::string(std::move(out));
    }
    std::string describe() const override { return "caller"; }

private:
    const Stmt& block_;
    ScopePtr scope_;
};

}  // namespace

void install_globals(Scope& globals) {
    globals.set("range", builtin("range", range_function));
    globals.set("namespace", builtin("namespace", namespace_function));
    globals.set("dict", builtin("dict", dict_function));
    globals.set("raise_exception", builtin("raise_exception", raise_exception_function));
    globals.set("strftime_now", builtin("strftime_now", strftime_now_function));
    for (const char* name : {"cycler", "joiner", "lipsum"})
        globals.set(name, Value::unsupported(fmt::format("the global '{}' is not supported", name)));
}

Value make_macro(const Stmt& definition, const ScopePtr& defining_scope) {
    return Value::callable(std::make_shared<MacroCallable>(definition, defining_scope));
}

Value make_caller(const Stmt& call_block, const ScopePtr& call_scope) {
    return Value::callable(std::make_shared<CallerCallable>(call_block, call_scope));
}

}  // namespace waste::tmpl
