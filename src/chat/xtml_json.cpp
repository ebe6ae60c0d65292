// xtml_json.cpp — Python's json.dumps forms and bounded JSON parsing (see
// xtml_json.h).
#include "chat/xtml_json.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <stdexcept>
#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace waste::chat {

namespace {

void append_string(std::string& out, std::string_view text) {
    out.push_back('"');
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            case '\b': out += "\\b"; break;
            case '\f': out += "\\f"; break;
            default:
                if (byte < 0x20) out += fmt::format("\\u{:04x}", byte);
                else out.push_back(c);  // '/', U+007F and above as themselves (ensure_ascii=False)
        }
    }
    out.push_back('"');
}

void append_value(std::string& out, const Json& value, JsonForm form, size_t depth) {
    // parse_json_bounded refuses deeper text; a caller-built value is bounded here too.
    if (depth > max_json_depth * 2) throw std::length_error("JSON value nested too deeply to print");
    const bool spaced = form == JsonForm::argument;
    switch (value.type()) {
        case Json::value_t::null: out += "null"; return;
        case Json::value_t::boolean: out += value.get<bool>() ? "true" : "false"; return;
        case Json::value_t::number_integer: out += std::to_string(value.get<int64_t>()); return;
        case Json::value_t::number_unsigned: out += std::to_string(value.get<uint64_t>()); return;
        case Json::value_t::number_float: out += python_float_repr(value.get<double>()); return;
        case Json::value_t::string: append_string(out, value.get_ref<const std::string&>()); return;
        case Json::value_t::array: {
            out.push_back('[');
            bool first = true;
            for (const auto& item : value) {
                if (!first) out += spaced ? ", " : ",";
                first = false;
                append_value(out, item, form, depth + 1);
            }
            out.push_back(']');
            return;
        }
        case Json::value_t::object: {
            std::vector<std::pair<const std::string*, const Json*>> members;
            members.reserve(value.size());
            for (auto it = value.begin(); it != value.end(); ++it) members.emplace_back(&it.key(), &it.value());
            // sort_keys: Python compares str by code point, which for UTF-8 is byte order.
            if (form == JsonForm::declaration)
                std::stable_sort(members.begin(), members.end(), [](const auto& a, const auto& b) { return *a.first < *b.first; });
            out.push_back('{');
            bool first = true;
            for (const auto& [key, member] : members) {
                if (!first) out += spaced ? ", " : ",";
                first = false;
                append_string(out, *key);
                out += spaced ? ": " : ":";
                append_value(out, *member, form, depth + 1);
            }
            out.push_back('}');
            return;
        }
        case Json::value_t::binary:
        case Json::value_t::discarded: break;
    }
    throw std::invalid_argument("a JSON value of a kind JSON text cannot hold");
}

// One code point from UTF-8 at text[i] (advancing i), or -1 for a bad byte.
int32_t next_code_point(std::string_view text, size_t& i) {
    const auto b0 = static_cast<unsigned char>(text[i]);
    size_t length = b0 < 0x80 ? 1 : (b0 >> 5) == 0x6 ? 2 : (b0 >> 4) == 0xE ? 3 : (b0 >> 3) == 0x1E ? 4 : 0;
    if (length == 0 || i + length > text.size()) {
        ++i;
        return -1;
    }
    int32_t cp = length == 1 ? b0 : length == 2 ? (b0 & 0x1F) : length == 3 ? (b0 & 0x0F) : (b0 & 0x07);
    for (size_t k = 1; k < length; ++k) cp = (cp << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3F);
    i += length;
    return cp;
}

bool is_python_space(int32_t cp) {
    return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

}  // namespace

std::string python_float_repr(double value) {
    if (value != value) return "NaN";  // unreachable from parsed JSON; Python's spelling
    if (value == std::numeric_limits<double>::infinity()) return "Infinity";
    if (value == -std::numeric_limits<double>::infinity()) return "-Infinity";
    // Shortest round-trip digits, as d.ddde±X.
    char buffer[64];
    const auto result = std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::scientific);
    std::string_view text(buffer, static_cast<size_t>(result.ptr - buffer));
    std::string sign;
    if (!text.empty() && text[0] == '-') {
        sign = "-";
        text.remove_prefix(1);
    }
    const size_t e = text.find('e');
    std::string digits;
    for (const char c : text.substr(0, e))
        if (c != '.') digits.push_back(c);
    const int exponent = std::stoi(std::string(text.substr(e + 1)));
    while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
    // Python's repr: fixed notation for 1e-4 <= |x| < 1e16, else exponent form.
    if (exponent < -4 || exponent >= 16) {
        std::string out = sign + digits.substr(0, 1);
        if (digits.size() > 1) out += "." + digits.substr(1);
        out += fmt::format("e{}{:02d}", exponent < 0 ? '-' : '+', exponent < 0 ? -exponent : exponent);
        return out;
    }
    if (exponent < 0) return sign + "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
    const size_t integral = static_cast<size_t>(exponent) + 1;
    if (digits.size() <= integral) return sign + digits + std::string(integral - digits.size(), '0') + ".0";
    return sign + digits.substr(0, integral) + "." + digits.substr(integral);
}

std::string python_json_dumps(const Json& value, JsonForm form) {
    std::string out;
    append_value(out, value, form, 0);
    return out;
}

size_t json_text_depth(std::string_view text, size_t limit) {
    size_t depth = 0, deepest = 0;
    bool in_string = false, escaped = false;
    for (const char c : text) {
        if (in_string) {
            if (escaped) escaped = false;
            else if (c == '\\') escaped = true;
            else if (c == '"') in_string = false;
            continue;
        }
        if (c == '"') in_string = true;
        else if (c == '[' || c == '{') {
            if (++depth > deepest) deepest = depth;
            if (deepest > limit) return deepest;
        } else if ((c == ']' || c == '}') && depth > 0) {
            --depth;
        }
    }
    return deepest;
}

bool parse_json_bounded(std::string_view text, Json& out, std::string* why) {
    if (json_text_depth(text, max_json_depth) > max_json_depth) {
        if (why) *why = fmt::format("it nests deeper than {} levels", max_json_depth);
        return false;
    }
    try {
        out = Json::parse(text.begin(), text.end());
        return true;
    } catch (const nlohmann::json::exception& e) {
        if (why) *why = e.what();
        return false;
    }
}

bool is_blank(std::string_view text) {
    size_t i = 0;
    while (i < text.size())
        if (!is_python_space(next_code_point(text, i))) return false;
    return true;
}

}  // namespace waste::chat
