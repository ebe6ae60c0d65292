// tojson.cpp — see tojson.h.
#include "template/tojson.h"

#include <algorithm>
#include <cmath>

#include "platform/error.h"
#include "template/python_text.h"

namespace waste::tmpl {

std::string json_quote(std::string_view text, bool ensure_ascii) {
    std::string out = "\"";
    auto escape_unit = [&](unsigned unit) { out += fmt::format("\\u{:04x}", unit); };
    for (char32_t c : decode_utf8(text)) {
        switch (c) {
        case '"': out += "\\\""; continue;
        case '\\': out += "\\\\"; continue;
        case '\n': out += "\\n"; continue;
        case '\r': out += "\\r"; continue;
        case '\t': out += "\\t"; continue;
        case '\b': out += "\\b"; continue;
        case '\f': out += "\\f"; continue;
        default: break;
        }
        if (c < 0x20) escape_unit(c);
        else if (c >= 0xDC80 && c <= 0xDCFF) {
            // an undecodable byte: Python holds it as a lone surrogate
            if (ensure_ascii) escape_unit(static_cast<unsigned>(c));
            else fail(WASTE_ERR_INVALID_ARGUMENT, "tojson: the text is not valid UTF-8");
        } else if (ensure_ascii && c > 0x7E) {
            if (c >= 0x10000) {
                const char32_t v = c - 0x10000;
                escape_unit(0xD800 + (v >> 10));
                escape_unit(0xDC00 + (v & 0x3FF));
            } else {
                escape_unit(c);
            }
        } else {
            append_utf8(out, c);
        }
    }
    out.push_back('"');
    return out;
}

namespace {

class JsonWriter {
public:
    JsonWriter(const JsonStyle& style, size_t max_bytes) : style_(style), max_bytes_(max_bytes) {}

    void write(const Value& value, int depth) {
        if (out.size() > max_bytes_) fail(WASTE_ERR_INVALID_ARGUMENT, "tojson: the JSON text is more than {} bytes", max_bytes_);
        if (depth > 256) fail(WASTE_ERR_INVALID_ARGUMENT, "tojson: nested deeper than 256");
        switch (value.kind()) {
        case Value::Kind::none: out += "null"; return;
        case Value::Kind::boolean: out += value.as_bool() ? "true" : "false"; return;
        case Value::Kind::integer: out += std::to_string(value.as_int()); return;
        case Value::Kind::floating: {
            const double f = value.as_float();
            if (std::isnan(f)) out += "NaN";
            else if (std::isinf(f)) out += f > 0 ? "Infinity" : "-Infinity";
            else out += python_float_repr(f);
            return;
        }
        case Value::Kind::string: out += json_quote(value.as_string(), style_.ensure_ascii); return;
        case Value::Kind::list: {
            if (value.view()) fail(WASTE_ERR_INVALID_ARGUMENT, "Object of type {} is not JSON serializable", value.view());
            const auto& items = value.items();
            if (items.empty()) { out += "[]"; return; }
            out += "[";
            for (size_t i = 0; i < items.size(); ++i) {
                if (i) out += separator();
                newline(depth + 1);
                write(items[i], depth + 1);
            }
            newline(depth);
            out += "]";
            return;
        }
        case Value::Kind::dict: {
            const auto& dict = value.as_dict();
            if (dict.loop_object) fail(WASTE_ERR_INVALID_ARGUMENT, "Object of type LoopContext is not JSON serializable");
            if (dict.items.empty()) { out += "{}"; return; }
            std::vector<const std::pair<std::string, Value>*> entries;
            for (const auto& entry : dict.items) entries.push_back(&entry);
            if (style_.sort_keys)
                std::stable_sort(entries.begin(), entries.end(), [](auto* a, auto* b) { return a->first < b->first; });
            out += "{";
            for (size_t i = 0; i < entries.size(); ++i) {
                if (i) out += separator();
                newline(depth + 1);
                out += json_quote(entries[i]->first, style_.ensure_ascii);
                out += style_.key_separator;
                write(entries[i]->second, depth + 1);
            }
            newline(depth);
            out += "}";
            return;
        }
        case Value::Kind::undefined:
            if (value.undefined_info().unsupported) fail(WASTE_ERR_UNSUPPORTED, "{}", value.undefined_info().hint);
            fail(WASTE_ERR_INVALID_ARGUMENT, "Object of type Undefined is not JSON serializable");
        default: fail(WASTE_ERR_INVALID_ARGUMENT, "Object of type {} is not JSON serializable", type_name(value));
        }
    }

    std::string out;

private:
    std::string separator() const {
        // json.dumps with an indent drops the item separator's trailing space
        // (its default becomes ',' then); an explicit one is kept as given.
        return style_.item_separator;
    }
    void newline(int depth) {
        if (!style_.indent) return;
        out.push_back('\n');
        for (int i = 0; i < depth; ++i) out += *style_.indent;
    }

    const JsonStyle& style_;
    size_t max_bytes_;
};

}  // namespace

std::string to_json(const Value& value, const JsonStyle& style, size_t max_bytes) {
    JsonWriter writer(style, max_bytes);
    writer.write(value, 0);
    return std::move(writer.out);
}

}  // namespace waste::tmpl
