// hf_regex.cpp — Oniguruma -> PCRE2 rewriting of Split patterns (hf_regex.h).
#include "text/hf_regex.h"

#include <array>

#include "platform/error.h"

namespace waste::text {
namespace {

// Unicode White_Space (stable since 6.3), as a class body.
constexpr const char white_space[] =
    "\\x{09}-\\x{0D}\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}";

bool is_general_category(std::string_view name) {
    static constexpr std::array<std::string_view, 38> categories = {
        "L",  "Lu", "Ll", "Lt", "Lm", "Lo", "M",  "Mn", "Mc", "Me", "N",  "Nd", "Nl", "No", "P",  "Pc", "Pd", "Ps", "Pe",
        "Pi", "Pf", "Po", "S",  "Sm", "Sc", "Sk", "So", "Z",  "Zs", "Zl", "Zp", "C",  "Cc", "Cf", "Cs", "Co", "Cn", "L&"};
    for (const auto category : categories)
        if (name == category) return true;
    return false;
}

bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

}  // namespace

std::string pcre2_from_hf_regex(std::string_view pattern, const std::string& where) {
    if (pattern.empty()) fail(WASTE_ERR_FORMAT, "{}: empty regex", where);
    if (pattern.size() > max_hf_regex_bytes)
        fail(WASTE_ERR_FORMAT, "{}: regex of {} bytes, more than {}", where, pattern.size(), max_hf_regex_bytes);
    std::string out;
    bool in_class = false;
    size_t class_start = 0;  // offset of the class's first member (after '[' or "[^")
    for (size_t i = 0; i < pattern.size(); ++i) {
        const char c = pattern[i];
        if (c == '[') {
            if (in_class) {
                // Oniguruma nests a class (or a POSIX bracket) there; PCRE2 would not.
                fail(WASTE_ERR_FORMAT, "{}: '[' inside a character class at offset {} is not supported", where, i);
            }
            in_class = true;
            out += c;
            if (i + 1 < pattern.size() && pattern[i + 1] == '^') out += pattern[++i];
            class_start = i + 1;
            continue;
        }
        if (c == ']' && in_class && i != class_start) {
            in_class = false;
            out += c;
            continue;
        }
        if (c == '&' && in_class && i + 1 < pattern.size() && pattern[i + 1] == '&')
            fail(WASTE_ERR_FORMAT, "{}: class intersection at offset {} is not supported", where, i);
        if (c != '\\') {
            out += c;
            continue;
        }
        if (i + 1 >= pattern.size()) fail(WASTE_ERR_FORMAT, "{}: regex ends in a lone backslash", where);
        const char escape = pattern[++i];
        switch (escape) {
            case 's': out += in_class ? std::string(white_space) : "[" + std::string(white_space) + "]"; break;
            case 'S':
                if (in_class)
                    fail(WASTE_ERR_FORMAT, "{}: \\S inside a character class at offset {} is not supported", where,
                         i - 1);
                out += "[^" + std::string(white_space) + "]";
                break;
            case 'd': out += "\\p{Nd}"; break;
            case 'D': out += "\\P{Nd}"; break;
            case 'p':
            case 'P': {
                const size_t close = pattern.find('}', i);
                if (i + 1 >= pattern.size() || pattern[i + 1] != '{' || close == std::string_view::npos)
                    fail(WASTE_ERR_FORMAT, "{}: \\{} at offset {} has no {{name}}", where, escape, i - 1);
                std::string_view name = pattern.substr(i + 2, close - i - 2);
                bool negated = escape == 'P';
                if (!name.empty() && name.front() == '^') {
                    negated = !negated;
                    name.remove_prefix(1);
                }
                if (name.empty() || name.size() > 64 || name.find_first_of("\\{}[]") != std::string_view::npos)
                    fail(WASTE_ERR_FORMAT, "{}: property name at offset {} is not supported", where, i - 1);
                out += negated ? "\\P{" : "\\p{";
                if (!is_general_category(name)) out += "sc:";
                out.append(name);
                out += '}';
                i = close;
                break;
            }
            case 'u': {
                if (i + 4 >= pattern.size() || !is_hex(pattern[i + 1]) || !is_hex(pattern[i + 2]) ||
                    !is_hex(pattern[i + 3]) || !is_hex(pattern[i + 4]))
                    fail(WASTE_ERR_FORMAT, "{}: \\u at offset {} is not followed by four hex digits", where, i - 1);
                out += "\\x{";
                out.append(pattern.substr(i + 1, 4));
                out += '}';
                i += 4;
                break;
            }
            case 'v': out += "\\x{0B}"; break;  // PCRE2's \v is a class (vertical space), Oniguruma's the one character
            case 'r': case 'n': case 't': case 'f': case 'x': case 'e': case 'a':
            case '0':
                out += '\\';
                out += escape;
                break;
            default:
                if ((escape >= 'a' && escape <= 'z') || (escape >= 'A' && escape <= 'Z') ||
                    (escape >= '1' && escape <= '9'))
                    fail(WASTE_ERR_FORMAT, "{}: escape \\{} at offset {} is not supported", where, escape, i - 1);
                out += '\\';  // an escaped punctuation character: literal in both dialects
                out += escape;
        }
    }
    if (in_class) fail(WASTE_ERR_FORMAT, "{}: character class not closed", where);
    return out;
}

}  // namespace waste::text
