// methods.cpp — see methods.h.
#include "template/methods.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "platform/error.h"
#include "template/evaluator.h"
#include "template/python_text.h"

namespace waste::tmpl {

namespace {

const std::set<std::string>& python_string_methods() {
    static const std::set<std::string> names = {
        "capitalize", "casefold", "center", "count", "encode", "endswith", "expandtabs", "find", "format", "format_map",
        "index", "isalnum", "isalpha", "isascii", "isdecimal", "isdigit", "isidentifier", "islower", "isnumeric",
        "isprintable", "isspace", "istitle", "isupper", "join", "ljust", "lower", "lstrip", "maketrans", "partition",
        "removeprefix", "removesuffix", "replace", "rfind", "rindex", "rjust", "rpartition", "rsplit", "rstrip", "split",
        "splitlines", "startswith", "strip", "swapcase", "title", "translate", "upper", "zfill"};
    return names;
}
const std::set<std::string> implemented_string_methods = {
    "strip", "lstrip", "rstrip", "split", "rsplit", "startswith", "endswith", "replace", "upper", "lower",
    "title", "capitalize", "find", "rfind", "count", "join", "removeprefix", "removesuffix", "isdigit", "isspace"};
const std::set<std::string> number_attributes = {"real", "imag", "conjugate", "numerator", "denominator", "bit_length",
                                                 "bit_count", "is_integer", "hex", "as_integer_ratio", "to_bytes", "from_bytes"};

std::string object_type(const Value& value) {
    if (value.is_none()) return "None";
    return type_name(value) + " object";
}

Value missing_attribute(const Value& object, const std::string& name) {
    return Value::undefined(fmt::format("'{}' has no attribute '{}'", object_type(object), name));
}

const Value& argument(CallArgs& args, size_t index, const char* keyword, const Value& fallback) {
    if (index < args.positional.size()) return args.positional[index];
    for (auto& [key, value] : args.keyword)
        if (key == keyword) return value;
    return fallback;
}

std::optional<std::string> optional_string(const Value& value, const char* method) {
    if (value.is_none() || value.is_undefined()) {
        if (value.is_undefined() && value.undefined_info().hint != "absent") fail_undefined(value);
        return std::nullopt;
    }
    if (!value.is_string()) fail(WASTE_ERR_INVALID_ARGUMENT, "{}() argument must be str or None, not {}", method, type_name(value));
    return value.as_string();
}

const std::string& required_string(const Value& value, const char* method) {
    if (value.is_undefined()) fail_undefined(value);
    if (!value.is_string()) fail(WASTE_ERR_INVALID_ARGUMENT, "{}() argument must be str, not {}", method, type_name(value));
    return value.as_string();
}

int64_t optional_int(const Value& value, int64_t fallback, const char* method) {
    if (value.is_undefined() && value.undefined_info().hint == "absent") return fallback;
    if (!value.is_int() && !value.is_bool()) fail(WASTE_ERR_INVALID_ARGUMENT, "{}() integer argument expected, got {}", method, type_name(value));
    return value.as_int();
}

Value string_method(Evaluator& evaluator, const Value& self, const std::string& name, CallArgs& args) {
    static const Value absent = Value::undefined("absent");
    const std::string& text = self.as_string();
    if (name == "strip" || name == "lstrip" || name == "rstrip") {
        const auto chars = optional_string(argument(args, 0, "chars", absent), name.c_str());
        return Value::string(python_strip(text, chars, name != "rstrip", name != "lstrip"));
    }
    if (name == "split" || name == "rsplit") {
        const auto separator = optional_string(argument(args, 0, "sep", absent), name.c_str());
        const int64_t max_split = optional_int(argument(args, 1, "maxsplit", absent), -1, name.c_str());
        if (separator && separator->empty()) fail(WASTE_ERR_INVALID_ARGUMENT, "empty separator");
        if (name == "rsplit" && max_split >= 0) fail(WASTE_ERR_UNSUPPORTED, "rsplit() with maxsplit is not supported");
        std::vector<Value> parts;
        for (auto& part : python_split(text, separator, max_split)) parts.push_back(Value::string(std::move(part)));
        evaluator.check_list_size(parts.size());
        return Value::list(std::move(parts));
    }
    if (name == "startswith" || name == "endswith") {
        const Value& affix = argument(args, 0, "prefix", absent);
        if (args.positional.size() > 1) fail(WASTE_ERR_UNSUPPORTED, "{}() with start/end is not supported", name);
        std::vector<std::string> candidates;
        if (affix.is_tuple()) {
            for (const auto& item : affix.items()) candidates.push_back(required_string(item, name.c_str()));
        } else {
            candidates.push_back(required_string(affix, name.c_str()));
        }
        for (const auto& candidate : candidates) {
            if (candidate.size() > text.size()) continue;
            if (name == "startswith" ? text.compare(0, candidate.size(), candidate) == 0
                                     : text.compare(text.size() - candidate.size(), candidate.size(), candidate) == 0)
                return Value::boolean(true);
        }
        return Value::boolean(false);
    }
    if (name == "replace") {
        const std::string& old = required_string(argument(args, 0, "old", absent), "replace");
        const std::string& replacement = required_string(argument(args, 1, "new", absent), "replace");
        const int64_t count = optional_int(argument(args, 2, "count", absent), -1, "replace");
        std::string out = python_replace(text, old, replacement, count);
        evaluator.check_string_size(out.size());
        return Value::string(std::move(out));
    }
    if (name == "upper" || name == "lower" || name == "title" || name == "capitalize") return Value::string(python_case(text, name));
    if (name == "find" || name == "rfind" || name == "count") {
        if (args.positional.size() != 1) fail(WASTE_ERR_UNSUPPORTED, "{}() with start/end is not supported", name);
        const std::string& needle = required_string(args.positional[0], name.c_str());
        if (name == "count") {
            if (needle.empty()) return Value::integer(static_cast<int64_t>(code_point_length(text) + 1));
            int64_t count = 0;
            for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size())) ++count;
            return Value::integer(count);
        }
        const size_t at = name == "find" ? text.find(needle) : text.rfind(needle);
        if (at == std::string::npos) return Value::integer(-1);
        return Value::integer(static_cast<int64_t>(code_point_length(std::string_view(text).substr(0, at))));
    }
    if (name == "join") {
        std::string out;
        bool first = true;
        for (const auto& item : iterate(argument(args, 0, "iterable", absent))) {
            if (!item.is_string()) fail(WASTE_ERR_INVALID_ARGUMENT, "sequence item: expected str instance, {} found", type_name(item));
            if (!first) out += text;
            first = false;
            out += item.as_string();
            evaluator.check_string_size(out.size());
        }
        return Value::string(std::move(out));
    }
    if (name == "removeprefix" || name == "removesuffix") {
        const std::string& affix = required_string(argument(args, 0, "affix", absent), name.c_str());
        if (affix.size() <= text.size()) {
            if (name == "removeprefix" && text.compare(0, affix.size(), affix) == 0) return Value::string(text.substr(affix.size()));
            if (name == "removesuffix" && text.compare(text.size() - affix.size(), affix.size(), affix) == 0)
                return Value::string(text.substr(0, text.size() - affix.size()));
        }
        return Value::string(text);
    }
    if (name == "isdigit" || name == "isspace") {
        if (text.empty()) return Value::boolean(false);
        if (!is_ascii(text)) {
            if (name == "isdigit") fail(WASTE_ERR_UNSUPPORTED, "isdigit() on non-ASCII text is not supported");
            for (char32_t c : decode_utf8(text))
                if (!is_python_space(c)) return Value::boolean(false);
            return Value::boolean(true);
        }
        for (char c : text)
            if (name == "isdigit" ? !std::isdigit(static_cast<unsigned char>(c)) : !is_python_space(static_cast<unsigned char>(c)))
                return Value::boolean(false);
        return Value::boolean(true);
    }
    fail(WASTE_ERR_INTERNAL, "string method '{}' has no implementation", name);
}

Value dict_method(const Value& self, const std::string& name, CallArgs& args) {
    const DictData& dict = self.as_dict();
    if (name == "get") {
        if (args.positional.empty() || args.positional.size() > 2 || !args.keyword.empty())
            fail(WASTE_ERR_INVALID_ARGUMENT, "get() takes a key and an optional default");
        const Value& key = args.positional[0];
        const Value fallback = args.positional.size() == 2 ? args.positional[1] : Value::none();
        if (!key.is_string()) return fallback;
        const Value* found = dict.find(key.as_string());
        return found ? *found : fallback;
    }
    if (!args.positional.empty() || !args.keyword.empty()) fail(WASTE_ERR_INVALID_ARGUMENT, "{}() takes no arguments", name);
    std::vector<Value> out;
    out.reserve(dict.items.size());
    for (const auto& [key, value] : dict.items) {
        if (name == "keys") out.push_back(Value::string(key));
        else if (name == "values") out.push_back(value);
        else out.push_back(Value::list({Value::string(key), value}, true));
    }
    return Value::dict_view(std::move(out), name == "keys" ? "dict_keys" : name == "values" ? "dict_values" : "dict_items");
}

Value list_method(const Value& self, const std::string& name, CallArgs& args) {
    auto& items = self.mutable_items();
    if (self.is_tuple() && (name == "pop" || name == "clear")) fail(WASTE_ERR_INVALID_ARGUMENT, "'tuple' object has no attribute '{}'", name);
    if (name == "pop") {
        int64_t index = -1;
        if (!args.positional.empty()) {
            if (!args.positional[0].is_int()) fail(WASTE_ERR_INVALID_ARGUMENT, "pop() index must be an integer");
            index = args.positional[0].as_int();
        }
        const auto size = static_cast<int64_t>(items.size());
        if (size == 0) fail(WASTE_ERR_INVALID_ARGUMENT, "pop from empty list");
        if (index < 0) index += size;
        if (index < 0 || index >= size) fail(WASTE_ERR_INVALID_ARGUMENT, "pop index out of range");
        Value out = items[static_cast<size_t>(index)];
        items.erase(items.begin() + index);
        return out;
    }
    if (name == "clear") {
        items.clear();
        return Value::none();
    }
    if (args.positional.size() != 1) fail(WASTE_ERR_UNSUPPORTED, "{}() with start/stop is not supported", name);
    int64_t count = 0;
    for (size_t i = 0; i < items.size(); ++i) {
        if (!equals(items[i], args.positional[0])) continue;
        if (name == "index") return Value::integer(static_cast<int64_t>(i));
        ++count;
    }
    if (name == "index") fail(WASTE_ERR_INVALID_ARGUMENT, "{} is not in list", python_repr(args.positional[0]));
    return Value::integer(count);
}

class BoundMethod : public Callable {
public:
    BoundMethod(Value self, std::string name) : self_(std::move(self)), name_(std::move(name)) {}
    Value call(Evaluator& evaluator, CallArgs& args) override {
        if (self_.is_string()) {
            if (self_.is_markup()) fail(WASTE_ERR_UNSUPPORTED, "methods of a safe (Markup) string are not supported");
            return string_method(evaluator, self_, name_, args);
        }
        if (self_.is_dict()) return dict_method(self_, name_, args);
        return list_method(self_, name_, args);
    }
    std::string describe() const override { return "method '" + name_ + "' of '" + type_name(self_) + "'"; }

private:
    Value self_;
    std::string name_;
};

Value bound(const Value& self, const std::string& name) { return Value::callable(std::make_shared<BoundMethod>(self, name)); }

Value unsafe(const Value& object, const std::string& name) {
    return Value::unsafe_undefined(fmt::format("access to attribute '{}' of '{}' object is unsafe.", name, type_name(object)));
}

bool is_dunder(const std::string& name) { return name.size() > 4 && name.rfind("__", 0) == 0 && name.compare(name.size() - 2, 2, "__") == 0; }

}  // namespace

Value get_attribute(const Value& object, const std::string& name) {
    switch (object.kind()) {
    case Value::Kind::undefined: fail_undefined(object);
 case Value::Kind::dict: {
        if (object.as_dict().loop_object) {
            if (const Value* found = object.as_dict().find(name)) return *found;
            if (name == "cycle" || name == "changed") return Value::unsupported(fmt::format("loop.{} is not supported", name));
            return missing_attribute(object, name);
        }
        if (name == "items" || name == "keys" || name == "values" || name == "get") return bound(object, name);
        if (name == "pop" || name == "popitem" || name == "setdefault" || name == "update" || name == "clear") return unsafe(object, name);
        if (name == "copy" || name == "fromkeys") return Value::unsupported(fmt::format("dict.{} is not supported", name));
        if (is_dunder(name)) return unsafe(object, name);
        if (const Value* found = object.as_dict().find(name)) return *found;
        return missing_attribute(object, name);
    }
    case Value::Kind::namespace_object:
        if (const Value* found = object.namespace_attributes().find(name)) return *found;
        return missing_attribute(object, name);
    case Value::Kind::string:
        if (implemented_string_methods.count(name)) return bound(object, name);
        if (python_string_methods().count(name)) return Value::unsupported(fmt::format("str.{} is not supported", name));
        if (is_dunder(name)) return unsafe(object, name);
        return missing_attribute(object, name);
    case Value::Kind::list:
        if (name == "pop" || name == "clear" || name == "index" || name == "count") return bound(object, name);
        if (name == "append" || name == "extend" || name == "insert" || name == "remove" || name == "reverse" || name == "sort")
            return object.is_tuple() ? missing_attribute(object, name) : unsafe(object, name);
        if (name == "copy") return Value::unsupported("list.copy is not supported");
        if (is_dunder(name)) return unsafe(object, name);
        return missing_attribute(object, name);
    case Value::Kind::integer:
    case Value::Kind::floating:
    case Value::Kind::boolean:
        if (number_attributes.count(name) || is_dunder(name))
            return Value::unsupported(fmt::format("attribute '{}' of a number is not supported", name));
        return missing_attribute(object, name);
    default:
        if (is_dunder(name)) return unsafe(object, name);
        return missing_attribute(object, name);
    }
}

Value get_item(const Value& object, const Value& key) {
    if (object.is_undefined()) fail_undefined(object);
    if (object.view()) return Value::undefined(fmt::format("'{} object' has no element {}", object.view(), python_repr(key)));
    if (object.is_dict()) {
        if (key.is_string()) {
            if (const Value* found = object.as_dict().find(key.as_string())) return *found;
            return get_attribute(object, key.as_string());
        }
        if (key.is_list() && !key.is_tuple()) fail(WASTE_ERR_INVALID_ARGUMENT, "unhashable type: 'list'");
        return Value::undefined(fmt::format("'dict object' has no element {}", python_repr(key)));
    }
    if ((object.is_list() || object.is_string()) && (key.is_int() || key.is_bool())) {
        int64_t index = key.as_int();
        if (object.is_list()) {
            const auto size = static_cast<int64_t>(object.items().size());
            if (index < 0) index += size;
            if (index < 0 || index >= size)
                return Value::undefined(fmt::format("'{} object' has no element {}", type_name(object), key.as_int()));
            return object.items()[static_cast<size_t>(index)];
        }
        const auto points = decode_utf8(object.as_string());
        const auto size = static_cast<int64_t>(points.size());
        if (index < 0) index += size;
        if (index < 0 || index >= size) return Value::undefined(fmt::format("'str object' has no element {}", key.as_int()));
        return Value::string(encode_utf8(points, static_cast<size_t>(index), static_cast<size_t>(index) + 1));
    }
    if (key.is_string()) {
        if (object.is_namespace() || object.is_list() || object.is_string() || object.is_none() || object.is_number())
            return get_attribute(object, key.as_string());
    }
    if (key.is_undefined()) fail_undefined(key);
    return Value::undefined(fmt::format("'{}' has no element {}", object_type(object), python_repr(key)));
}

Value slice_value(const Value& object, std::optional<int64_t> start, std::optional<int64_t> stop, std::optional<int64_t> step) {
    if (object.is_undefined()) fail_undefined(object);
    if (object.is_list() && !object.view()) {
        std::vector<Value> out;
        for (int64_t i : slice_indices(static_cast<int64_t>(object.items().size()), start, stop, step))
            out.push_back(object.items()[static_cast<size_t>(i)]);
        return Value::list(std::move(out), object.is_tuple());
    }
    if (object.is_string()) {
        const std::string& text = object.as_string();
        if (is_ascii(text)) {
            std::string out;
            for (int64_t i : slice_indices(static_cast<int64_t>(text.size()), start, stop, step)) out.push_back(text[static_cast<size_t>(i)]);
            return Value::string(std::move(out));
        }
        const auto points = decode_utf8(text);
        std::string out;
        for (int64_t i : slice_indices(static_cast<int64_t>(points.size()), start, stop, step)) append_utf8(out, points[static_cast<size_t>(i)]);
        return Value::string(std::move(out));
    }
    if (object.is_dict()) fail(WASTE_ERR_INVALID_ARGUMENT, "unhashable type: 'slice'");
    // Jinja2's getitem turns the TypeError into an Undefined
    return Value::undefined(fmt::format("'{}' object is not subscriptable", type_name(object)));
}

std::vector<std::string> python_split(const std::string& text, const std::optional<std::string>& separator, int64_t max_split) {
    std::vector<std::string> parts;
    if (separator) {
        size_t begin = 0;
        while (max_split < 0 || static_cast<int64_t>(parts.size()) < max_split) {
            const size_t at = text.find(*separator, begin);
            if (at == std::string::npos) break;
            parts.push_back(text.substr(begin, at - begin));
            begin = at + separator->size();
        }
        parts.push_back(text.substr(begin));
        return parts;
    }
    const auto points = decode_utf8(text);
    size_t i = 0;
    while (i < points.size()) {
        while (i < points.size() && is_python_space(points[i])) ++i;
        if (i >= points.size()) break;
        if (max_split >= 0 && static_cast<int64_t>(parts.size()) >= max_split) {
            size_t end = points.size();
            while (end > i && is_python_space(points[end - 1])) --end;
            parts.push_back(encode_utf8(points, i, end));
            break;
        }
        size_t j = i;
        while (j < points.size() && !is_python_space(points[j])) ++j;
        parts.push_back(encode_utf8(points, i, j));
        i = j;
    }
    return parts;
}

std::string python_replace(const std::string& text, const std::string& old, const std::string& replacement, int64_t count) {
    if (old.empty()) {
        // Python inserts the replacement between code points and at both ends.
        const auto points = decode_utf8(text);
        std::string out;
        int64_t done = 0;
        for (size_t i = 0; i <= points.size(); ++i) {
            if (count < 0 || done < count) {
                out += replacement;
                ++done;
            }
            if (i < points.size()) append_utf8(out, points[i]);
        }
        return out;
    }
    std::string out;
    size_t begin = 0;
    int64_t done = 0;
    while (count < 0 || done < count) {
        const size_t at = text.find(old, begin);
        if (at == std::string::npos) break;
        out.append(text, begin, at - begin);
        out += replacement;
        begin = at + old.size();
        ++done;
    }
    out.append(text, begin, std::string::npos);
    return out;
}

std::string python_case(const std::string& text, const std::string& method) {
    if (!is_ascii(text)) fail(WASTE_ERR_UNSUPPORTED, "str.{} on non-ASCII text is not supported", method);
    std::string out = text;
    if (method == "upper") for (auto& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    else if (method == "lower") for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    else if (method == "capitalize") {
        for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        if (!out.empty()) out[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(out[0])));
    } else {  // title: a letter after a non-letter is upper, others lower
        bool previous_letter = false;
        for (auto& c : out) {
            const bool letter = std::isalpha(static_cast<unsigned char>(c));
            if (letter) c = static_cast<char>(previous_letter ? std::tolower(static_cast<unsigned char>(c)) : std::toupper(static_cast<unsigned char>(c)));
            previous_letter = letter;
        }
    }
    return out;
}

}  // namespace waste::tmpl
