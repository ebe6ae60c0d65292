// value.h — the values a chat template computes with, shaped after the
// Python objects Jinja2 hands around: Undefined (Jinja2's default kind),
// None, bool, int, float, str, list/tuple, dict (insertion-ordered, string
// keys), and two reference objects: namespace() and callables (macros,
// globals, bound methods).
//
// Lists and namespaces are shared by reference as in Python (a namespace
// assigned to two names is one object; list.pop mutates in place).
//
// Deliberately not here: Python's str()/repr() text (python_text.h), what
// operators and filters do (evaluator, filters), JSON (tojson.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace waste::tmpl {

class Value;
class Evaluator;

// How deep lists and dicts may nest inside each other. Printing, comparing
// and freeing a value recurse over its nesting, so a template that wraps a
// list in a list 100,000 times must fail when it builds it, not overflow the
// stack later. JSON contexts are bounded tighter (128).
inline constexpr int max_value_nesting = 512;

struct ListData {
    std::vector<Value> items;
    int nesting = 1;  // 1 + the deepest list or dict inside
    bool tuple = false;  // printed (a, b) instead of [a, b]
    // "dict_items", "dict_keys" or "dict_values" for what dict.items() and
    // friends return: iterable, but printed as dict_items([...]), not
    // subscriptable, not JSON, not addable — as in Python.
    const char* view = nullptr;
};

struct DictData {
    std::vector<std::pair<std::string, Value>> items;  // insertion order, unique keys
    bool loop_object = false;  // a for loop's `loop`: attributes only, never printed or serialised
    int nesting = 1;
    const Value* find(std::string_view key) const;
    Value* find(std::string_view key);
    void set(std::string key, Value value);
};

// The arguments of a call: positional, then keyword (in call order).
struct CallArgs {
    std::vector<Value> positional;
    std::vector<std::pair<std::string, Value>> keyword;
};

// Anything callable: a macro, a global function, a bound method.
class Callable {
public:
    virtual ~Callable() = default;
    virtual Value call(Evaluator& evaluator, CallArgs& args) = 0;
    virtual std::string describe() const = 0;  // "macro 'name'", "method 'strip' of 'str'"
};

// What an Undefined remembers so that using it can fail the way Jinja2 does.
struct UndefinedInfo {
    std::string hint;        // "'x' is undefined", "'dict object' has no attribute 'y'"
    bool unsafe = false;     // a sandbox refusal: any call is an error (SecurityError in Jinja2)
    bool unsupported = false;  // exists in Python but not here: any use is an error
};

class Value {
public:
    enum class Kind : uint8_t { undefined, none, boolean, integer, floating, string, list, dict, namespace_object, callable };

    Value() : kind_(Kind::undefined) {}
    static Value undefined(std::string hint);
    static Value unsafe_undefined(std::string hint);
    static Value unsupported(std::string hint);
    static Value none();
    static Value boolean(bool value);
    static Value integer(int64_t value);
    static Value floating(double value);
    static Value string(std::string text, bool markup = false);
    static Value list(std::vector<Value> items, bool tuple = false);
    static Value dict_view(std::vector<Value> items, const char* view);
    static Value dict(DictData dict);
    static Value namespace_object(DictData attributes);
    static Value callable(std::shared_ptr<Callable> callable);

    Kind kind() const { return kind_; }
    bool is_undefined() const { return kind_ == Kind::undefined; }
    bool is_none() const { return kind_ == Kind::none; }
    bool is_bool() const { return kind_ == Kind::boolean; }
    bool is_int() const { return kind_ == Kind::integer; }
    bool is_float() const { return kind_ == Kind::floating; }
    bool is_number() const { return kind_ == Kind::integer || kind_ == Kind::floating || kind_ == Kind::boolean; }
    bool is_string() const { return kind_ == Kind::string; }
    bool is_list() const { return kind_ == Kind::list; }
    bool is_tuple() const { return kind_ == Kind::list && list_->tuple; }
    const char* view() const { return kind_ == Kind::list ? list_->view : nullptr; }
    bool is_dict() const { return kind_ == Kind::dict; }
    bool is_namespace() const { return kind_ == Kind::namespace_object; }
    bool is_callable() const { return kind_ == Kind::callable; }

    bool as_bool() const { return bool_; }
    int64_t as_int() const { return kind_ == Kind::boolean ? (bool_ ? 1 : 0) : int_; }  // bool is an int in Python
    double as_float() const { return kind_ == Kind::floating ? float_ : static_cast<double>(as_int()); }
    const std::string& as_string() const { return *string_; }
    bool is_markup() const { return markup_; }
    const std::vector<Value>& items() const { return list_->items; }
    std::vector<Value>& mutable_items() const { return list_->items; }
    const DictData& as_dict() const { return *dict_; }
    DictData& namespace_attributes() const { return *dict_; }
    Callable& as_callable() const { return *callable_; }
    const UndefinedInfo& undefined_info() const;
    // Two values are the same object (Python `is` for lists, dicts, namespaces).
    bool same_object(const Value& other) const;
    // 0 for scalars, else ListData/DictData::nesting.
    int nesting() const;

private:
    Kind kind_;
    bool bool_ = false;
    bool markup_ = false;
    int64_t int_ = 0;
    double float_ = 0;
    std::shared_ptr<const std::string> string_;
    std::shared_ptr<ListData> list_;
    std::shared_ptr<DictData> dict_;
    std::shared_ptr<Callable> callable_;
    std::shared_ptr<const UndefinedInfo> undefined_;
};

// Python's type name: 'str', 'int', 'dict', 'NoneType', 'Namespace' ...
std::string type_name(const Value& value);
// Python's bool(value); an unsupported value is an error.
bool truthy(const Value& value);
// Python's ==, with 1 == 1.0 == True and deep list/dict comparison.
bool equals(const Value& a, const Value& b);

// A JSON document as template values (objects keep their key order).
// Integers beyond int64 are refused; depth is bounded.
Value from_json(const nlohmann::ordered_json& json);
// A deep copy of lists, dicts and namespaces, so a render never changes its caller's context.
Value deep_copy(const Value& value);

}  // namespace waste::tmpl
