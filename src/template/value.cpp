// value.cpp — see value.h.
#include "template/value.h"

#include <algorithm>
#include <limits>

#include "platform/error.h"

namespace waste::tmpl {

const Value* DictData::find(std::string_view key) const {
    for (const auto& [name, value] : items)
        if (name == key) return &value;
    return nullptr;
}

Value* DictData::find(std::string_view key) {
    for (auto& [name, value] : items)
        if (name == key) return &value;
    return nullptr;
}

void DictData::set(std::string key, Value value) {
    if (Value* existing = find(key)) *existing = std::move(value);
    else items.emplace_back(std::move(key), std::move(value));
}

Value Value::undefined(std::string hint) {
    Value v;
    v.undefined_ = std::make_shared<const UndefinedInfo>(UndefinedInfo{std::move(hint), false, false});
    return v;
}

Value Value::unsafe_undefined(std::string hint) {
    Value v;
    v.undefined_ = std::make_shared<const UndefinedInfo>(UndefinedInfo{std::move(hint), true, false});
    return v;
}

Value Value::unsupported(std::string hint) {
    Value v;
    v.undefined_ = std::make_shared<const UndefinedInfo>(UndefinedInfo{std::move(hint), false, true});
    return v;
}

const UndefinedInfo& Value::undefined_info() const {
    static const UndefinedInfo plain{"value is undefined", false, false};
    return undefined_ ? *undefined_ : plain;
}

Value Value::none() { Value v; v.kind_ = Kind::none; return v; }
Value Value::boolean(bool value) { Value v; v.kind_ = Kind::boolean; v.bool_ = value; return v; }
Value Value::integer(int64_t value) { Value v; v.kind_ = Kind::integer; v.int_ = value; return v; }
Value Value::floating(double value) { Value v; v.kind_ = Kind::floating; v.float_ = value; return v; }

Value Value::string(std::string text, bool markup) {
    Value v;
    v.kind_ = Kind::string;
    v.string_ = std::make_shared<const std::string>(std::move(text));
    v.markup_ = markup;
    return v;
}

int Value::nesting() const {
    if (kind_ == Kind::list) return list_->nesting;
    if (kind_ == Kind::dict) return dict_->nesting;
    return 0;
}

namespace {

int nesting_above(int deepest) {
    if (deepest + 1 > max_value_nesting)
        fail(WASTE_ERR_INVALID_ARGUMENT, "a list or dict nested deeper than {} levels", max_value_nesting);
    return deepest + 1;
}

}  // namespace

Value Value::list(std::vector<Value> items, bool tuple) {
    int deepest = 0;
    for (const auto& item : items) deepest = std::max(deepest, item.nesting());
    const int nesting = nesting_above(deepest);
    Value v;
    v.kind_ = Kind::list;
    v.list_ = std::make_shared<ListData>(ListData{std::move(items), nesting, tuple});
    return v;
}

Value Value::dict_view(std::vector<Value> items, const char* view) {
    Value v = list(std::move(items));
    v.list_->view = view;
    return v;
}

Value Value::dict(DictData dict) {
    int deepest = 0;
    for (const auto& [key, item] : dict.items) deepest = std::max(deepest, item.nesting());
    dict.nesting = nesting_above(deepest);
    Value v;
    v.kind_ = Kind::dict;
    v.dict_ = std::make_shared<DictData>(std::move(dict));
    return v;
}

Value Value::namespace_object(DictData attributes) {
    Value v;
    v.kind_ = Kind::namespace_object;
    v.dict_ = std::make_shared<DictData>(std::move(attributes));
    return v;
}

Value Value::callable(std::shared_ptr<Callable> callable) {
    Value v;
    v.kind_ = Kind::callable;
    v.callable_ = std::move(callable);
    return v;
}

bool Value::same_object(const Value& other) const {
    if (kind_ != other.kind_) return false;
    switch (kind_) {
    case Kind::list: return list_ == other.list_;
    case Kind::dict:
    case Kind::namespace_object: return dict_ == other.dict_;
    case Kind::callable: return callable_ == other.callable_;
    case Kind::undefined:
    case Kind::none: return true;
    case Kind::boolean: return bool_ == other.bool_;
    default: return false;
    }
}

std::string type_name(const Value& value) {
    switch (value.kind()) {
    case Value::Kind::undefined: return "Undefined";
    case Value::Kind::none: return "NoneType";
    case Value::Kind::boolean: return "bool";
    case Value::Kind::integer: return "int";
    case Value::Kind::floating: return "float";
    case Value::Kind::string: return "str";
    case Value::Kind::list: return value.view() ? value.view() : value.is_tuple() ? "tuple" : "list";
    case Value::Kind::dict: return value.as_dict().loop_object ? "LoopContext" : "dict";
    case Value::Kind::namespace_object: return "Namespace";
    case Value::Kind::callable: return "function";
    }
    return "object";
}

bool truthy(const Value& value) {
    switch (value.kind()) {
    case Value::Kind::undefined:
        if (value.undefined_info().unsupported) fail(WASTE_ERR_UNSUPPORTED, "{}", value.undefined_info().hint);
        return false;
    case Value::Kind::none: return false;
    case Value::Kind::boolean: return value.as_bool();
    case Value::Kind::integer: return value.as_int() != 0;
    case Value::Kind::floating: return value.as_float() != 0;
    case Value::Kind::string: return !value.as_string().empty();
    case Value::Kind::list: return !value.items().empty();
    case Value::Kind::dict: return !value.as_dict().items.empty();
    default: return true;
    }
}

bool equals(const Value& a, const Value& b) {
    if (a.is_number() && b.is_number()) {
        if (a.is_float() || b.is_float()) return a.as_float() == b.as_float();
        return a.as_int() == b.as_int();
    }
    if (a.kind() != b.kind()) return false;
    switch (a.kind()) {
    case Value::Kind::undefined:
    case Value::Kind::none: return true;
    case Value::Kind::string: return a.as_string() == b.as_string();
    case Value::Kind::list: {
        if (a.is_tuple() != b.is_tuple() || a.view() != b.view()) return false;
        const auto &x = a.items(), &y = b.items();
        if (x.size() != y.size()) return false;
        for (size_t i = 0; i < x.size(); ++i)
            if (!equals(x[i], y[i])) return false;
        return true;
    }
    case Value::Kind::dict: {
        const auto &x = a.as_dict(), &y = b.as_dict();
        if (x.items.size() != y.items.size()) return false;
        for (const auto& [key, item] : x.items) {
            const Value* other = y.find(key);
            if (!other || !equals(item, *other)) return false;
        }
        return true;
    }
    default: return a.same_object(b);
    }
}

namespace {

// Deeper JSON than this is refused: the evaluator recurses over values
// (printing, tojson, equality), and real requests nest a few levels.
constexpr int max_json_depth = 128;

Value from_json_at(const nlohmann::ordered_json& json, int depth) {
    if (depth > max_json_depth) fail(WASTE_ERR_INVALID_ARGUMENT, "template context: JSON nested deeper than {}", max_json_depth);
    switch (json.type()) {
    case nlohmann::ordered_json::value_t::null: return Value::none();
    case nlohmann::ordered_json::value_t::boolean: return Value::boolean(json.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return Value::integer(json.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
        const auto value = json.get<uint64_t>();
        if (value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
            fail(WASTE_ERR_INVALID_ARGUMENT, "template context: integer {} is beyond int64", value);
        return Value::integer(static_cast<int64_t>(value));
    }
    case nlohmann::ordered_json::value_t::number_float: return Value::floating(json.get<double>());
    case nlohmann::ordered_json::value_t::string: return Value::string(json.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
        std::vector<Value> items;
        items.reserve(json.size());
        for (const auto& item : json) items.push_back(from_json_at(item, depth + 1));
        return Value::list(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
        DictData dict;
        dict.items.reserve(json.size());
        for (const auto& [key, item] : json.items()) dict.set(key, from_json_at(item, depth + 1));
        return Value::dict(std::move(dict));
    }
    default: fail(WASTE_ERR_INVALID_ARGUMENT, "template context: unsupported JSON value of type {}", json.type_name());
    }
}

}  // namespace

Value from_json(const nlohmann::ordered_json& json) { return from_json_at(json, 0); }

Value deep_copy(const Value& value) {
    switch (value.kind()) {
    case Value::Kind::list: {
        std::vector<Value> items;
        items.reserve(value.items().size());
        for (const auto& item : value.items()) items.push_back(deep_copy(item));
        return Value::list(std::move(items), value.is_tuple());
    }
    case Value::Kind::dict: {
        DictData dict;
        for (const auto& [key, item] : value.as_dict().items) dict.items.emplace_back(key, deep_copy(item));
        return Value::dict(std::move(dict));
    }
    case Value::Kind::namespace_object: {
        DictData dict;
        for (const auto& [key, item] : value.namespace_attributes().items) dict.items.emplace_back(key, deep_copy(item));
        return Value::namespace_object(std::move(dict));
    }
    default: return value;
    }
}

}  // namespace waste::tmpl
