// filters.cpp — see filters.h.
#include "template/filters.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <set>

#include "platform/error.h"
#include "template/evaluator.h"
#include "template/methods.h"
#include "template/python_text.h"
#include "template/tojson.h"

namespace waste::tmpl {

namespace {

const std::set<std::string> filter_names = {
    "abs", "attr", "capitalize", "count", "d", "default", "dictsort", "first", "float", "int", "items", "join", "last",
    "length", "list", "lower", "map", "max", "min", "reject", "rejectattr", "replace", "reverse", "safe", "select",
    "selectattr", "sort", "string", "sum", "title", "tojson", "trim", "unique", "upper", "e", "escape", "indent", "round"};
const std::set<std::string> test_names = {
    "boolean", "callable", "defined", "divisibleby", "eq", "equalto", "escaped", "even", "false", "float", "ge",
    "greaterthan", "gt", "in", "integer", "iterable", "le", "lessthan", "lower", "lt", "mapping", "ne", "none",
    "number", "odd", "sameas", "sequence", "string", "true", "undefined", "upper", "==", "!=", "<", "<=", ">", ">=", "filter", "test"};

// The arguments of a filter call by Python's rules: positional in order,
// then by keyword, else the default; unknown keywords are an error.
class Arguments {
public:
    Arguments(const std::string& filter, CallArgs& args, std::vector<std::string> names)
        : filter_(filter), args_(args), names_(std::move(names)) {
        if (args_.positional.size() > names_.size())
            fail(WASTE_ERR_INVALID_ARGUMENT, "filter '{}' takes at most {} argument(s), got {}", filter_, names_.size(), args_.positional.size());
        for (const auto& [key, value] : args_.keyword)
            if (std::find(names_.begin(), names_.end(), key) == names_.end())
                fail(WASTE_ERR_INVALID_ARGUMENT, "filter '{}' got an unexpected keyword argument '{}'", filter_, key);
    }
    const Value* get(const std::string& name) const {
        for (size_t i = 0; i < names_.size(); ++i)
            if (names_[i] == name && i < args_.positional.size()) return &args_.positional[i];
        for (const auto& [key, value] : args_.keyword)
            if (key == name) return &value;
        return nullptr;
    }
    bool flag(const std::string& name, bool fallback) const {
        const Value* v = get(name);
        return v ? truthy(*v) : fallback;
    }

private:
    const std::string& filter_;
    CallArgs& args_;
    std::vector<std::string> names_;
};

std::string soft_str(const Value& value) { return python_str(value); }

// Jinja2's attribute path "a.b.0" for map/selectattr/sort/dictsort.
Value attribute_path(const Value& item, const std::string& path) {
    Value current = item;
    size_t begin = 0;
    while (begin <= path.size()) {
        const size_t dot = path.find('.', begin);
        const std::string part = path.substr(begin, dot == std::string::npos ? std::string::npos : dot - begin);
        const bool numeric = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
        current = numeric ? get_item(current, Value::integer(std::strtoll(part.c_str(), nullptr, 10))) : get_item(current, Value::string(part));
        if (dot == std::string::npos) break;
        begin = dot + 1;
    }
    return current;
}

Value lowered_for_sort(const Value& value, bool case_sensitive) {
    if (!case_sensitive && value.is_string()) return Value::string(python_case(value.as_string(), "lower"));
    return value;
}

Value tojson_filter(Evaluator& evaluator, const Value& target, CallArgs& call) {
    Arguments args("tojson", call, {"ensure_ascii", "indent", "separators", "sort_keys"});
    JsonStyle style;
    style.ensure_ascii = args.flag("ensure_ascii", false);
    style.sort_keys = args.flag("sort_keys", false);
    if (const Value* indent = args.get("indent"); indent && !indent->is_none()) {
        if (indent->is_string()) style.indent = indent->as_string();
        else if (indent->is_int()) style.indent = std::string(static_cast<size_t>(std::clamp<int64_t>(indent->as_int(), 0, 64)), ' ');
        else fail(WASTE_ERR_INVALID_ARGUMENT, "tojson: indent must be an int or a string, not {}", type_name(*indent));
        style.item_separator = ",";
    }
    if (const Value* separators = args.get("separators"); separators && !separators->is_none()) {
        if (!separators->is_list() || separators->items().size() != 2 || !separators->items()[0].is_string() ||
            !separators->items()[1].is_string())
            fail(WASTE_ERR_INVALID_ARGUMENT, "tojson: separators must be a pair of strings");
        style.item_separator = separators->items()[0].as_string();
        style.key_separator = separators->items()[1].as_string();
    }
    return Value::string(to_json(target, style, evaluator.options().limits.max_output_bytes));
}

std::vector<Value> select_items(Evaluator& evaluator, const std::string& filter, const Value& target, CallArgs& call, bool by_attribute, bool keep) {
    std::vector<Value> out;
    size_t test_at = by_attribute ? 1 : 0;
    if (by_attribute && call.positional.empty()) fail(WASTE_ERR_INVALID_ARGUMENT, "{}: an attribute name is required", filter);
    if (!call.keyword.empty()) fail(WASTE_ERR_UNSUPPORTED, "{}: keyword arguments are not supported", filter);
    std::string attribute;
    if (by_attribute) {
        if (!call.positional[0].is_string()) fail(WASTE_ERR_INVALID_ARGUMENT, "{}: the attribute must be a string", filter);
        attribute = call.positional[0].as_string();
    }
    std::string test;
    CallArgs test_args;
    if (call.positional.size() > test_at) {
        if (!call.positional[test_at].is_string()) fail(WASTE_ERR_INVALID_ARGUMENT, "{}: the test name must be a string", filter);
        test = call.positional[test_at].as_string();
        if (!is_known_test(test)) fail(WASTE_ERR_INVALID_ARGUMENT, "no test named '{}'", test);
        test_args.positional.assign(call.positional.begin() + static_cast<long>(test_at) + 1, call.positional.end());
    }
    if (!truthy(target)) return out;  // Jinja2: `if seq:` before iterating
    for (const auto& item : iterate(target)) {
        evaluator.step();
        const Value subject = by_attribute ? attribute_path(item, attribute) : item;
        CallArgs args = test_args;
        const bool passed = test.empty() ? truthy(subject) : apply_test(evaluator, test, subject, args);
        if (passed == keep) out.push_back(item);
    }
    return out;
}

// Python's int() of a float beyond int64 is a big integer: refused, not wrapped.
int64_t float_to_int(double value) {
    if (std::fabs(value) >= 9.2e18) fail(WASTE_ERR_UNSUPPORTED, "int of {} is beyond int64 (Python's big integers are not supported)", value);
    return static_cast<int64_t>(value);
}

int64_t to_int(const Value& value, int64_t fallback) {
    if (value.is_int() || value.is_bool()) return value.as_int();
    if (value.is_float()) {
        if (!std::isfinite(value.as_float())) return fallback;
        return float_to_int(value.as_float());
    }
    if (value.is_string()) {
        std::string text = python_strip(value.as_string(), std::nullopt, true, true);
        text.erase(std::remove(text.begin(), text.end(), '_'), text.end());
        if (text.empty()) return fallback;
        char* end = nullptr;
        errno = 0;
        const long long parsed = std::strtoll(text.c_str(), &end, 10);
        if (end == text.c_str() + text.size()) {
            if (errno == ERANGE) fail(WASTE_ERR_UNSUPPORTED, "int of '{}' is beyond int64 (Python's big integers are not supported)", text);
            return parsed;
        }
        if (text.find_first_of("xX") != std::string::npos) return fallback;  // strtod reads hex floats, Python's float() does not
        const double as_float = std::strtod(text.c_str(), &end);
        if (end == text.c_str() + text.size() && std::isfinite(as_float)) return float_to_int(as_float);
        return fallback;
    }
    return fallback;
}

// Jinja2's title filter (not str.title): a word starts after a run of
// whitespace or any of -({[< ; its first character is upper-cased, the rest
// lower-cased.
std::string jinja_title(const std::string& text) {
    if (!is_ascii(text)) fail(WASTE_ERR_UNSUPPORTED, "the title filter on non-ASCII text is not supported");
    auto separates = [](char c) { return is_python_space(static_cast<unsigned char>(c)) || std::string_view("-({[<").find(c) != std::string_view::npos; };
    std::string out = text;
    bool word_start = true;
    for (auto& c : out) {
        if (separates(c)) {
            word_start = true;
            continue;
        }
        c = static_cast<char>(word_start ? std::toupper(static_cast<unsigned char>(c)) : std::tolower(static_cast<unsigned char>(c)));
        word_start = false;
    }
    return out;
}

}  // namespace

bool is_known_filter(const std::string& name) { return filter_names.count(name) > 0; }
bool is_known_test(const std::string& name) { return test_names.count(name) > 0; }

Value apply_filter(Evaluator& evaluator, const std::string& name, const Value& target, CallArgs& call) {
    if (name == "tojson") return tojson_filter(evaluator, target, call);
    if (name == "string") {
        Arguments args(name, call, {});
        if (target.is_string()) return target;
        return Value::string(soft_str(target));
    }
    if (name == "safe") {
        Arguments args(name, call, {});
        return Value::string(soft_str(target), true);
    }
    if (name == "e" || name == "escape") fail(WASTE_ERR_UNSUPPORTED, "the '{}' filter is not supported", name);
    if (name == "length" || name == "count") {
        Arguments args(name, call, {});
        switch (target.kind()) {
        case Value::Kind::string: return Value::integer(static_cast<int64_t>(code_point_length(target.as_string())));
        case Value::Kind::list:
            if (target.view() && std::string_view(target.view()) == "generator") fail(WASTE_ERR_INVALID_ARGUMENT, "object of type 'generator' has no len()");
            return Value::integer(static_cast<int64_t>(target.items().size()));
        case Value::Kind::dict: return Value::integer(static_cast<int64_t>(target.as_dict().items.size()));
        case Value::Kind::undefined: return Value::integer(0);
        default: fail(WASTE_ERR_INVALID_ARGUMENT, "object of type '{}' has no len()", type_name(target));
        }
    }
    if (name == "trim") {
        Arguments args(name, call, {"chars"});
        const Value* chars = args.get("chars");
        std::optional<std::string> set;
        if (chars && !chars->is_none()) set = soft_str(*chars);
        return Value::string(python_strip(soft_str(target), set, true, true));
    }
    if (name == "title") {
        Arguments args(name, call, {});
        return Value::string(jinja_title(soft_str(target)));
    }
    if (name == "upper" || name == "lower" || name == "capitalize") {
        Arguments args(name, call, {});
        return Value::string(python_case(soft_str(target), name));
    }
    if (name == "replace") {
        Arguments args(name, call, {"old", "new", "count"});
        const Value* old = args.get("old");
        const Value* replacement = args.get("new");
        if (!old || !replacement) fail(WASTE_ERR_INVALID_ARGUMENT, "replace: old and new are required");
        const Value* count = args.get("count");
        std::string out = python_replace(soft_str(target), soft_str(*old), soft_str(*replacement), count && !count->is_none() ? count->as_int() : -1);
        evaluator.check_string_size(out.size());
        return Value::string(std::move(out));
    }
    if (name == "d" || name == "default") {
        Arguments args(name, call, {"default_value", "boolean"});
        const Value* fallback = args.get("default_value");
        const bool boolean = args.flag("boolean", false);
        if (target.is_undefined() || (boolean && !truthy(target))) return fallback ? *fallback : Value::string("");
        return target;
    }
    if (name == "items") {
        Arguments args(name, call, {});
        if (target.is_undefined()) return Value::dict_view({}, "generator");
        if (!target.is_dict()) fail(WASTE_ERR_INVALID_ARGUMENT, "Can only get item pairs from a mapping.");
        std::vector<Value> out;
        for (const auto& [key, value] : target.as_dict().items) out.push_back(Value::list({Value::string(key), value}, true));
        return Value::dict_view(std::move(out), "generator");  // Jinja2 yields the pairs
    }
    if (name == "list") {
        Arguments args(name, call, {});
        return Value::list(iterate(target));
    }
    if (name == "join") {
        Arguments args(name, call, {"d", "attribute"});
        const Value* separator = args.get("d");
        const Value* attribute = args.get("attribute");
        const std::string glue = separator ? soft_str(*separator) : "";
        std::string out;
        bool first = true;
        for (const auto& item : iterate(target)) {
            if (!first) out += glue;
            first = false;
            out += soft_str(attribute ? attribute_path(item, soft_str(*attribute)) : item);
            evaluator.check_string_size(out.size());
        }
        return Value::string(std::move(out));
    }
    if (name == "first" || name == "last") {
        Arguments args(name, call, {});
        if (target.is_dict() && name == "last") fail(WASTE_ERR_UNSUPPORTED, "last of a dict is not supported");
        const auto items = iterate(target);
        if (items.empty()) return Value::undefined(fmt::format("No {} item, sequence was empty.", name));
        return name == "first" ? items.front() : items.back();
    }
    if (name == "reverse") {
        Arguments args(name, call, {});
        if (target.is_string()) return slice_value(target, std::nullopt, std::nullopt, -1);
        auto items = iterate(target);
        std::reverse(items.begin(), items.end());
        return Value::list(std::move(items));
    }
    if (name == "select" || name == "reject") return Value::list(select_items(evaluator, name, target, call, false, name == "select"));
    if (name == "selectattr" || name == "rejectattr")
        return Value::list(select_items(evaluator, name, target, call, true, name == "selectattr"));
    if (name == "map") {
        std::vector<Value> out;
        if (!truthy(target)) return Value::list({});  // Jinja2: `if seq:` before iterating
        const Value* attribute = nullptr;
        Value fallback;
        bool has_default = false;
        for (const auto& [key, value] : call.keyword) {
            if (key == "attribute") attribute = &value;
            else if (key == "default") { fallback = value; has_default = true; }
            else fail(WASTE_ERR_INVALID_ARGUMENT, "map: unexpected keyword argument '{}'", key);
        }
        if (attribute) {
            for (const auto& item : iterate(target)) {
                Value v = attribute_path(item, soft_str(*attribute));
                out.push_back(v.is_undefined() && has_default ? fallback : v);
            }
            return Value::list(std::move(out));
        }
        if (call.positional.empty() || !call.positional[0].is_string()) fail(WASTE_ERR_INVALID_ARGUMENT, "map: a filter name or attribute= is required");
        const std::string filter = call.positional[0].as_string();
        if (!is_known_filter(filter)) fail(WASTE_ERR_INVALID_ARGUMENT, "no filter named '{}'", filter);
        for (const auto& item : iterate(target)) {
            evaluator.step();
            CallArgs inner;
            inner.positional.assign(call.positional.begin() + 1, call.positional.end());
            out.push_back(apply_filter(evaluator, filter, item, inner));
        }
        return Value::list(std::move(out));
    }
    if (name == "unique") {
        Arguments args(name, call, {"case_sensitive", "attribute"});
        if (args.get("attribute")) fail(WASTE_ERR_UNSUPPORTED, "unique(attribute=) is not supported");
        const bool case_sensitive = args.flag("case_sensitive", false);
        std::vector<Value> out, seen;
        for (const auto& item : iterate(target)) {
            if (item.is_dict() || (item.is_list() && !item.is_tuple())) fail(WASTE_ERR_INVALID_ARGUMENT, "unhashable type: '{}'", type_name(item));
            const Value key = lowered_for_sort(item, case_sensitive);
            if (std::none_of(seen.begin(), seen.end(), [&](const Value& s) { return equals(s, key); })) {
                seen.push_back(key);
                out.push_back(item);
            }
        }
        return Value::list(std::move(out));
    }
    if (name == "sort" || name == "dictsort") {
        const bool dictsort = name == "dictsort";
        Arguments args(name, call, dictsort ? std::vector<std::string>{"case_sensitive", "by", "reverse"}
                                            : std::vector<std::string>{"reverse", "case_sensitive", "attribute"});
        const bool reverse = args.flag("reverse", false);
        const bool case_sensitive = args.flag("case_sensitive", false);
        std::vector<Value> items;
        size_t key_index = 0;
        std::string attribute;
        if (dictsort) {
            if (!target.is_dict()) fail(WASTE_ERR_INVALID_ARGUMENT, "You can only sort by either 'key' or 'value'");
            for (const auto& [key, value] : target.as_dict().items) items.push_back(Value::list({Value::string(key), value}, true));
            if (const Value* by = args.get("by")) {
                const std::string b = soft_str(*by);
                if (b == "value") key_index = 1;
                else if (b != "key") fail(WASTE_ERR_INVALID_ARGUMENT, "You can only sort by either 'key' or 'value'");
            }
        } else {
            items = iterate(target);
            if (const Value* a = args.get("attribute")) attribute = soft_str(*a);
        }
        auto key_of = [&](const Value& item) {
            const Value raw = dictsort ? item.items()[key_index] : attribute.empty() ? item : attribute_path(item, attribute);
            return lowered_for_sort(raw, case_sensitive);
        };
        std::vector<std::pair<Value, Value>> keyed;
        for (auto& item : items) keyed.emplace_back(key_of(item), item);
        std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
            return reverse ? compare_values(b.first, a.first) < 0 : compare_values(a.first, b.first) < 0;
        });
        std::vector<Value> out;
        for (auto& [key, item] : keyed) out.push_back(std::move(item));
        return Value::list(std::move(out));
    }
    if (name == "int") {
        Arguments args(name, call, {"default", "base"});
        if (const Value* base = args.get("base"); base && base->as_int() != 10) fail(WASTE_ERR_UNSUPPORTED, "int(base=) is not supported");
        const Value* fallback = args.get("default");
        if (target.is_undefined()) fail_undefined(target);  // int(Undefined) raises
        return Value::integer(to_int(target, fallback ? fallback->as_int() : 0));
    }
    if (name == "float") {
        Arguments args(name, call, {"default"});
        const Value* fallback = args.get("default");
        if (target.is_undefined()) fail_undefined(target);  // float(Undefined) raises
        if (target.is_number()) return Value::floating(target.as_float());
        if (target.is_string()) {
            const std::string text = python_strip(target.as_string(), std::nullopt, true, true);
            if (text.find('_') != std::string::npos) fail(WASTE_ERR_UNSUPPORTED, "float of '{}' (underscores) is not supported", text);
            char* end = nullptr;
            const double parsed = std::strtod(text.c_str(), &end);
            // strtod reads hex floats, Python's float() does not
            if (!text.empty() && end == text.c_str() + text.size() && text.find_first_of("xX") == std::string::npos)
                return Value::floating(parsed);
        }
        return Value::floating(fallback ? fallback->as_float() : 0.0);
    }
    if (name == "abs") {
        Arguments args(name, call, {});
        if (target.is_float()) return Value::floating(std::fabs(target.as_float()));
        if (target.is_int() || target.is_bool()) {
            if (target.as_int() == INT64_MIN) fail(WASTE_ERR_UNSUPPORTED, "abs() overflow");
            return Value::integer(std::llabs(target.as_int()));
        }
        fail(WASTE_ERR_INVALID_ARGUMENT, "bad operand type for abs(): '{}'", type_name(target));
    }
    if (name == "sum") {
        Arguments args(name, call, {"attribute", "start"});
        const Value* attribute = args.get("attribute");
        const Value* start = args.get("start");
        Value total = start ? *start : Value::integer(0);
        for (const auto& item : iterate(target))
            total = binary_operation(evaluator, "+", total, attribute ? attribute_path(item, soft_str(*attribute)) : item);
        return total;
    }
    if (name == "min" || name == "max") {
        Arguments args(name, call, {"case_sensitive", "attribute"});
        const bool case_sensitive = args.flag("case_sensitive", false);
        const Value* attribute = args.get("attribute");
        const auto items = iterate(target);
        if (items.empty()) return Value::undefined(fmt::format("No aggregated item, sequence was empty."));
        const Value* best = &items[0];
        auto key = [&](const Value& v) { return lowered_for_sort(attribute ? attribute_path(v, soft_str(*attribute)) : v, case_sensitive); };
        for (const auto& item : items) {
            const int c = compare_values(key(item), key(*best));
            if (name == "min" ? c < 0 : c > 0) best = &item;
        }
        return *best;
    }
    if (name == "attr") {
        if (call.positional.size() != 1 || !call.positional[0].is_string()) fail(WASTE_ERR_INVALID_ARGUMENT, "attr: one attribute name");
        return get_attribute(target, call.positional[0].as_string());
    }
    if (name == "round") {
        Arguments args(name, call, {"precision", "method"});
        const Value* precision = args.get("precision");
        const Value* method = args.get("method");
        if ((precision && precision->as_int() != 0) || (method && soft_str(*method) != "common"))
            fail(WASTE_ERR_UNSUPPORTED, "round with a precision or method is not supported");
        if (!target.is_number()) fail(WASTE_ERR_INVALID_ARGUMENT, "round: a number is required");
        const double v = target.as_float();
        return Value::floating(std::nearbyint(v));  // Python round(): half to even
    }
    if (name == "indent") fail(WASTE_ERR_UNSUPPORTED, "the 'indent' filter is not supported");
    fail(WASTE_ERR_INVALID_ARGUMENT, "no filter named '{}'", name);
}

bool apply_test(Evaluator& evaluator, const std::string& name, const Value& target, CallArgs& call) {
    auto one_argument = [&]() -> const Value& {
        if (call.positional.size() != 1 || !call.keyword.empty()) fail(WASTE_ERR_INVALID_ARGUMENT, "test '{}' takes one argument", name);
        return call.positional[0];
    };
    if (name == "defined") return !target.is_undefined();
    if (name == "undefined") return target.is_undefined();
    if (name == "none") return target.is_none();
    if (name == "boolean") return target.is_bool();
    if (name == "true") return target.is_bool() && target.as_bool();
    if (name == "false") return target.is_bool() && !target.as_bool();
    if (name == "integer") return target.is_int();
    if (name == "float") return target.is_float();
    if (name == "number") return target.is_number();
    if (name == "string") return target.is_string();
    if (name == "mapping") return target.is_dict();
    if (name == "iterable") return target.is_string() || target.is_list() || target.is_dict() || target.is_undefined();
    if (name == "sequence") return target.is_string() || target.is_list() || target.is_dict() || target.is_undefined();
    if (name == "callable") return target.is_callable();
    if (name == "escaped") return target.is_string() && target.is_markup();
    if (name == "lower" || name == "upper") {  // str(value).islower() / .isupper()
        const std::string text = python_str(target);
        const std::string converted = python_case(text, name);
        bool has_cased = false;
        for (char c : text)
            if (std::isalpha(static_cast<unsigned char>(c))) has_cased = true;
        return has_cased && converted == text;
    }
    if (name == "odd" || name == "even") {  // value % 2 == 1 / == 0
        const Value remainder = binary_operation(evaluator, "%", target, Value::integer(2));
        return equals(remainder, Value::integer(name == "odd" ? 1 : 0));
    }
    if (name == "divisibleby") {
        const Value& divisor = one_argument();
        const Value remainder = binary_operation(evaluator, "%", target, divisor);
        return !truthy(remainder);
    }
    if (name == "sameas") {
        const Value& other = one_argument();
        // CPython caches the ints -5..256; other numbers and strings depend on interning.
        if (target.is_int() && other.is_int() && target.as_int() == other.as_int() && target.as_int() >= -5 && target.as_int() <= 256)
            return true;
        if ((target.is_int() || target.is_float() || target.is_string()) && target.kind() == other.kind() && equals(target, other))
            fail(WASTE_ERR_UNSUPPORTED, "'sameas' on equal numbers or strings depends on Python's interning: not supported");
        return target.same_object(other);
    }
    if (name == "in") return contains(one_argument(), target);
    if (name == "eq" || name == "equalto" || name == "==") return equals(target, one_argument());
    if (name == "ne" || name == "!=") return !equals(target, one_argument());
    if (name == "lt" || name == "lessthan" || name == "<") return compare_values(target, one_argument()) < 0;
    if (name == "le" || name == "<=") return compare_values(target, one_argument()) <= 0;
    if (name == "gt" || name == "greaterthan" || name == ">") return compare_values(target, one_argument()) > 0;
    if (name == "ge" || name == ">=") return compare_values(target, one_argument()) >= 0;
    if (name == "filter" || name == "test") {
        const Value& arg = target;
        return arg.is_string() && (name == "filter" ? is_known_filter(arg.as_string()) : is_known_test(arg.as_string()));
    }
    fail(WASTE_ERR_INVALID_ARGUMENT, "no test named '{}'", name);
}

}  // namespace waste::tmpl
