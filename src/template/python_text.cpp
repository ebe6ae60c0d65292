// python_text.cpp — see python_text.h.
#include "template/python_text.h"

#include <charconv>
#include <cmath>

#include "platform/error.h"

namespace waste::tmpl {

std::vector<char32_t> decode_utf8(std::string_view text) {
    std::vector<char32_t> out;
    out.reserve(text.size());
    size_t i = 0;
    while (i < text.size()) {
        const auto byte = static_cast<unsigned char>(text[i]);
        int length = 0;
        char32_t code = 0;
        if (byte < 0x80) { out.push_back(byte); ++i; continue; }
        if ((byte & 0xE0) == 0xC0) { length = 2; code = byte & 0x1F; }
        else if ((byte & 0xF0) == 0xE0) { length = 3; code = byte & 0x0F; }
        else if ((byte & 0xF8) == 0xF0) { length = 4; code = byte & 0x07; }
        bool valid = length > 0 && i + length <= text.size();
        for (int k = 1; valid && k < length; ++k) {
            const auto next = static_cast<unsigned char>(text[i + k]);
            if ((next & 0xC0) != 0x80) valid = false;
            else code = (code << 6) | (next & 0x3F);
        }
        if (valid) {
            static constexpr char32_t minimum[5] = {0, 0, 0x80, 0x800, 0x10000};
            if (code < minimum[length] || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) valid = false;
        }
        if (!valid) { out.push_back(0xDC00 + byte); ++i; continue; }
        out.push_back(code);
        i += length;
    }
    return out;
}

void append_utf8(std::string& out, char32_t c) {
    if (c >= 0xDC80 && c <= 0xDCFF) { out.push_back(static_cast<char>(c - 0xDC00)); return; }  // an undecodable byte
    if (c < 0x80) out.push_back(static_cast<char>(c));
    else if (c < 0x800) { out.push_back(static_cast<char>(0xC0 | (c >> 6))); out.push_back(static_cast<char>(0x80 | (c & 0x3F))); }
    else if (c < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (c >> 12)));
        out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (c >> 18)));
        out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
}

std::string encode_utf8(const std::vector<char32_t>& code_points, size_t begin, size_t end) {
    std::string out;
    end = std::min(end, code_points.size());
    for (size_t i = begin; i < end; ++i) append_utf8(out, code_points[i]);
    return out;
}

bool is_ascii(std::string_view text) {
    for (char c : text)
        if (static_cast<unsigned char>(c) >= 0x80) return false;
    return true;
}

size_t code_point_length(std::string_view text) {
    if (is_ascii(text)) return text.size();
    return decode_utf8(text).size();
}

bool is_python_space(char32_t c) {
    if (c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F)) return true;
    if (c < 0x85) return false;
    return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
           c == 0x202F || c == 0x205F || c == 0x3000;
}

std::string python_strip(std::string_view text, const std::optional<std::string>& chars, bool left, bool right) {
    const auto points = decode_utf8(text);
    std::vector<char32_t> set;
    if (chars) set = decode_utf8(*chars);
    auto strippable = [&](char32_t c) {
        if (!chars) return is_python_space(c);
        for (char32_t s : set)
            if (s == c) return true;
        return false;
    };
    size_t begin = 0, end = points.size();
    if (left)
        while (begin < end && strippable(points[begin])) ++begin;
    if (right)
        while (end > begin && strippable(points[end - 1])) --end;
    return encode_utf8(points, begin, end);
}

std::vector<int64_t> slice_indices(int64_t length, std::optional<int64_t> start, std::optional<int64_t> stop,
                                   std::optional<int64_t> step_opt) {
    const int64_t step = step_opt.value_or(1);
    if (step == 0) fail(WASTE_ERR_INVALID_ARGUMENT, "slice step cannot be zero");
    auto adjust = [&](std::optional<int64_t> index, int64_t fallback) -> int64_t {
        if (!index) return fallback;
        int64_t value = *index;
        if (value < 0) {
            value += length;
            if (value < 0) value = step < 0 ? -1 : 0;
        } else if (value >= length) {
            value = step < 0 ? length - 1 : length;
        }
        return value;
    };
    std::vector<int64_t> out;
    if (step > 0) {
        const int64_t begin = adjust(start, 0), end = adjust(stop, length);
        for (int64_t i = begin; i < end; i += step) out.push_back(i);
    } else {
        const int64_t begin = adjust(start, length - 1), end = adjust(stop, -1);
        for (int64_t i = begin; i > end; i += step) out.push_back(i);
    }
    return out;
}

std::string python_float_repr(double value) {
    if (std::isnan(value)) return "nan";
    if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
    if (value == 0) return std::signbit(value) ? "-0.0" : "0.0";
    // Shortest round-trip digits, then Python's layout: fixed for exponents
    // -4 <= e < 16, else d.ddde+XX.
    char buffer[64];
    auto result = std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::scientific);
    std::string scientific(buffer, result.ptr);
    std::string sign;
    if (scientific[0] == '-') { sign = "-"; scientific.erase(0, 1); }
    const size_t e_at = scientific.find('e');
    std::string mantissa = scientific.substr(0, e_at);
    const int exponent = std::stoi(scientific.substr(e_at + 1));
    std::string digits;
    for (char c : mantissa)
        if (c != '.') digits.push_back(c);
    if (exponent >= 16 || exponent < -4) {
        std::string out = sign + digits.substr(0, 1);
        if (digits.size() > 1) out += "." + digits.substr(1);
        char exp_text[16];
        std::snprintf(exp_text, sizeof exp_text, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
        return out + exp_text;
    }
    std::string out;
    if (exponent < 0) {
        out = "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
    } else if (static_cast<size_t>(exponent + 1) >= digits.size()) {
        out = digits + std::string(static_cast<size_t>(exponent + 1) - digits.size(), '0') + ".0";
    } else {
        out = digits.substr(0, static_cast<size_t>(exponent + 1)) + "." + digits.substr(static_cast<size_t>(exponent + 1));
    }
    return sign + out;
}

namespace {

// str.isprintable() is false for these (Unicode Cc, Cf, Zs other than
// space, Zl, Zp, Co, surrogates). Unassigned code points (Cn) are not
// known here and print as themselves.
bool is_unprintable(char32_t c) {
    if (c < 0x20 || (c >= 0x7F && c <= 0xA0) || c == 0xAD) return true;
    if (c == 0x1680 || (c >= 0x2000 && c <= 0x200F) || (c >= 0x2028 && c <= 0x202F) || (c >= 0x205F && c <= 0x2064) ||
        (c >= 0x2066 && c <= 0x206F) || c == 0x3000 || c == 0xFEFF || (c >= 0xFFF9 && c <= 0xFFFB))
        return true;
    if ((c >= 0x600 && c <= 0x605) || c == 0x61C || c == 0x6DD || c == 0x70F || c == 0x180E || c == 0x8E2) return true;
    if ((c >= 0xD800 && c <= 0xF8FF) || c >= 0xF0000 || c == 0xE0001 || (c >= 0xE0020 && c <= 0xE007F)) return true;
    return false;
}

}  // namespace

std::string python_string_repr(std::string_view text) {
    const bool has_single = text.find('\'') != std::string_view::npos;
    const bool has_double = text.find('"') != std::string_view::npos;
    const char quote = has_single && !has_double ? '"' : '\'';
    std::string out(1, quote);
    for (char32_t c : decode_utf8(text)) {
        if (c == static_cast<char32_t>(quote) || c == '\\') { out.push_back('\\'); out.push_back(static_cast<char>(c)); }
        else if (c == '\n') out += "\\n";
        else if (c == '\r') out += "\\r";
        else if (c == '\t') out += "\\t";
        else if (c >= 0xDC80 && c <= 0xDCFF) out += fmt::format("\\udc{:02x}", static_cast<unsigned>(c - 0xDC00));
        else if (is_unprintable(c)) {
            if (c < 0x100) out += fmt::format("\\x{:02x}", static_cast<unsigned>(c));
            else if (c < 0x10000) out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
            else out += fmt::format("\\U{:08x}", static_cast<unsigned>(c));
        } else append_utf8(out, c);
    }
    out.push_back(quote);
    return out;
}

std::string python_repr(const Value& value) {
    switch (value.kind()) {
    case Value::Kind::string: return python_string_repr(value.as_string());
    case Value::Kind::list: {
        const bool tuple = value.is_tuple();
        if (value.view() && std::string_view(value.view()) == "generator")
            fail(WASTE_ERR_UNSUPPORTED, "printing a generator (the items filter's result) is not supported");
        std::string out = value.view() ? std::string(value.view()) + "([" : tuple ? "(" : "[";
        const auto& items = value.items();
        for (size_t i = 0; i < items.size(); ++i) {
            if (i) out += ", ";
            out += python_repr(items[i]);
        }
        if (tuple && items.size() == 1) out += ",";
        return out + (value.view() ? "])" : tuple ? ")" : "]");
    }
    case Value::Kind::dict: {
        if (value.as_dict().loop_object) fail(WASTE_ERR_UNSUPPORTED, "printing a loop object is not supported");
        std::string out = "{";
        bool first = true;
        for (const auto& [key, item] : value.as_dict().items) {
            if (!first) out += ", ";
            first = false;
            out += python_string_repr(key) + ": " + python_repr(item);
        }
        return out + "}";
    }
    case Value::Kind::undefined:
        if (value.undefined_info().unsupported) fail(WASTE_ERR_UNSUPPORTED, "{}", value.undefined_info().hint);
        return "Undefined";
    default: return python_str(value);
    }
}

std::string python_str(const Value& value) {
    switch (value.kind()) {
    case Value::Kind::undefined:
        if (value.undefined_info().unsupported) fail(WASTE_ERR_UNSUPPORTED, "{}", value.undefined_info().hint);
        return "";
    case Value::Kind::none: return "None";
    case Value::Kind::boolean: return value.as_bool() ? "True" : "False";
    case Value::Kind::integer: return std::to_string(value.as_int());
    case Value::Kind::floating: return python_float_repr(value.as_float());
    case Value::Kind::string: return value.as_string();
    case Value::Kind::list:
    case Value::Kind::dict: return python_repr(value);
    case Value::Kind::namespace_object:
        fail(WASTE_ERR_UNSUPPORTED, "printing a namespace object is not supported");
    case Value::Kind::callable:
        fail(WASTE_ERR_UNSUPPORTED, "printing {} is not supported", value.as_callable().describe());
    }
    return "";
}

}  // namespace waste::tmpl
