#include "grammar/regex_to_gbnf.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "grammar/grammar.h"
#include "platform/error.h"

namespace waste::grammar {

namespace {

using Ranges = std::vector<CharRange>;

Ranges complement(const Ranges& r) { return complement_ranges(merged_ranges(r)); }

// What a JSON string holds unescaped: no '"', '\', or U+0000..U+001F.
Ranges cut_to_json(const Ranges& r) {
    const Ranges allowed{{0x20, 0x21}, {0x23, 0x5B}, {0x5D, max_code_point}};
    Ranges out;
    for (auto x : merged_ranges(r))
        for (auto a : allowed) {
            const uint32_t first = std::max(x.first, a.first), last = std::min(x.last, a.last);
            if (first <= last) out.push_back({first, last});
        }
    return out;
}

const Ranges digit{{'0', '9'}};
const Ranges word{{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
// ECMAScript's WhiteSpace and LineTerminator code points.
const Ranges space{{0x09, 0x0D}, {0x20, 0x20}, {0xA0, 0xA0}, {0x1680, 0x1680}, {0x2000, 0x200A}, {0x2028, 0x2029},
                   {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};
const Ranges line_terminators{{0x0A, 0x0A}, {0x0D, 0x0D}, {0x2028, 0x2029}};

class RegexParser {
public:
    explicit RegexParser(const std::string& pattern) : p_(pattern) {}

    std::string run() {
        if (p_.size() > 4096) fail(WASTE_ERR_INVALID_ARGUMENT, "pattern of {} bytes (at most 4096)", p_.size());
        std::vector<std::string> branches;
        const std::string any = "[\\x20-\\x21\\x23-\\x5B\\x5D-\\U0010FFFF]*";
        while (true) {
            bool start = false, end = false;
            if (at('^')) {
                start = true;
                ++pos_;
            }
            std::string body = sequence(0);
            if (at('$')) {
                end = true;
                ++pos_;
            }
            branches.push_back((start ? "" : any + " ") + "( " + body + " )" + (end ? "" : " " + any));
            if (pos_ >= p_.size()) break;
            if (!at('|')) error(fmt::format("unexpected '{}'", p_[pos_]));
            ++pos_;
        }
        std::string out = "( ";
        for (size_t i = 0; i < branches.size(); ++i) out += (i ? " | " : "") + branches[i];
        return out + " )";
    }

private:
    [[noreturn]] void error(const std::string& what) const {
        fail(WASTE_ERR_INVALID_ARGUMENT, "pattern offset {}: {} (supported: docs/GRAMMAR.md)", pos_, what);
    }
    bool at(char c) const { return pos_ < p_.size() && p_[pos_] == c; }

    std::string alternation(size_t depth) {
        std::string out = "( " + sequence(depth);
        while (at('|')) {
            ++pos_;
            out += " | " + sequence(depth);
        }
        return out + " )";
    }

    std::string sequence(size_t depth) {
        std::string out = "\"\"";
        while (pos_ < p_.size() && !at('|') && !at(')')) {
            if (at('$') && depth == 0 && pos_ + 1 == p_.size()) break;
            if (at('$') && depth == 0 && pos_ + 1 < p_.size() && p_[pos_ + 1] == '|') break;
            std::string item = atom(depth);
            out += " " + quantified(item);
        }
        return out;
    }

    size_t count() {
        size_t value = 0, digits = 0;
        while (pos_ < p_.size() && std::isdigit(static_cast<unsigned char>(p_[pos_]))) {
            value = value * 10 + static_cast<size_t>(p_[pos_++] - '0');
            if (value > max_repetition_count) error(fmt::format("a repetition count above {}", max_repetition_count));
            ++digits;
        }
        if (!digits) error("expected a number in { }");
        return value;
    }

    std::string quantified(const std::string& item) {
        if (pos_ >= p_.size()) return item;
        std::string q;
        const char c = p_[pos_];
        if (c == '*' || c == '+' || c == '?') {
            q = std::string(1, c);
            ++pos_;
        } else if (c == '{') {
            ++pos_;
            const size_t m = count();
            if (at(',')) {
                ++pos_;
                if (at('}')) {
                    q = fmt::format("{{{},}}", m);
                } else {
                    const size_t n = count();
                    if (n < m) error("a repetition {m,n} with n below m");
                    q = fmt::format("{{{},{}}}", m, n);
                }
            } else {
                q = fmt::format("{{{}}}", m);
            }
            if (!at('}')) error("expected '}'");
            ++pos_;
        } else {
            return item;
        }
        if (at('?')) ++pos_;  // lazy: the same language
        if (pos_ < p_.size() && (p_[pos_] == '*' || p_[pos_] == '+' || p_[pos_] == '{')) error("a quantifier of a quantifier");
        return "( " + item + " )" + q;
    }

    std::string set(const Ranges& r) {
        const Ranges cut = cut_to_json(r);
        if (cut.empty()) error("a character set with no character a JSON string holds unescaped");
        std::string out = "[";
        for (auto x : cut) {
            out += fmt::format("\\U{:08X}", x.first);
            if (x.last != x.first) out += fmt::format("-\\U{:08X}", x.last);
        }
        return out + "]";
    }

    uint32_t hex(size_t digits) {
        uint32_t v = 0;
        for (size_t i = 0; i < digits; ++i) {
            if (pos_ >= p_.size() || !std::isxdigit(static_cast<unsigned char>(p_[pos_]))) error("expected hex digits");
            const char h = p_[pos_++];
            v = v * 16 + static_cast<uint32_t>(std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (h | 0x20) - 'a' + 10);
        }
        return v;
    }

    uint32_t utf8_char() {
        const auto b = static_cast<unsigned char>(p_[pos_]);
        const size_t length = b < 0x80 ? 1 : b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 0;
        if (!length || pos_ + length > p_.size()) error("invalid UTF-8");
        uint32_t v = length == 1 ? b : b & (0x7F >> length);
        for (size_t i = 1; i < length; ++i) v = (v << 6) | (static_cast<unsigned char>(p_[pos_ + i]) & 0x3F);
        pos_ += length;
        return v;
    }

    // An escape after '\': a set (class escapes) or one character.
    Ranges escape(bool in_class) {
        if (pos_ >= p_.size()) error("a '\\' at the end");
        const char e = p_[pos_++];
        switch (e) {
            case 'd': return digit;
            case 'D': return complement(digit);
            case 'w': return word;
            case 'W': return complement(word);
            case 's': return space;
            case 'S': return complement(space);
            case 't': return {{'\t', '\t'}};
            case 'n': return {{'\n', '\n'}};
            case 'r': return {{'\r', '\r'}};
            case 'f': return {{'\f', '\f'}};
            case 'v': return {{'\v', '\v'}};
            case '0': return {{0, 0}};
            case 'x': { const uint32_t v = hex(2); return {{v, v}}; }
            case 'u': {
                if (at('{')) {
                    ++pos_;
                    uint32_t v = 0;
                    size_t digits = 0;
                    while (pos_ < p_.size() && std::isxdigit(static_cast<unsigned char>(p_[pos_])) && digits < 6) {
                        v = v * 16 + hex(1);
                        ++digits;
                    }
                    if (!at('}') || !digits || v > max_code_point) error("a bad \\u{...} escape");
                    ++pos_;
                    return {{v, v}};
                }
                const uint32_t v = hex(4);
                return {{v, v}};
            }
            case 'b':
                if (in_class) return {{'\b', '\b'}};
                error("word boundaries (\\b) are not supported");
            case 'B': error("word boundaries (\\B) are not supported");
            default:
                if (std::isdigit(static_cast<unsigned char>(e))) error("backreferences are not supported");
                if (std::string("^$\\.*+?()[]{}|/-").find(e) != std::string::npos) return {{static_cast<uint32_t>(e), static_cast<uint32_t>(e)}};
                --pos_;
                error(fmt::format("unknown escape '\\{}'", e));
        }
    }

    std::string char_class() {
        ++pos_;  // '['
        bool negated = false;
        if (at('^')) {
            negated = true;
            ++pos_;
        }
        Ranges members;
        while (!at(']')) {
            if (pos_ >= p_.size()) error("an unterminated character class");
            Ranges first;
            if (at('\\')) {
                ++pos_;
                first = escape(true);
            } else {
                const uint32_t c = utf8_char();
                first = {{c, c}};
            }
            if (at('-') && pos_ + 1 < p_.size() && p_[pos_ + 1] != ']') {
                ++pos_;
                Ranges last;
                if (at('\\')) {
                    ++pos_;
                    last = escape(true);
                } else {
                    const uint32_t c = utf8_char();
                    last = {{c, c}};
                }
                if (first.size() != 1 || last.size() != 1 || first[0].first != first[0].last || last[0].first != last[0].last)
                    error("a range between class escapes");
                if (last[0].first < first[0].first) error("a backwards range");
                members.push_back({first[0].first, last[0].first});
            } else {
                members.insert(members.end(), first.begin(), first.end());
            }
        }
        ++pos_;
        return set(negated ? complement(members) : members);
    }

    std::string atom(size_t depth) {
        const char c = p_[pos_];
        if (depth > 64) error("groups nested deeper than 64");
        if (c == '(') {
            ++pos_;
            if (at('?')) {
                ++pos_;
                if (at(':')) {
                    ++pos_;
                } else if (at('<') && pos_ + 1 < p_.size() && p_[pos_ + 1] != '=' && p_[pos_ + 1] != '!') {
                    while (pos_ < p_.size() && p_[pos_] != '>') ++pos_;  // a named group: the name is not needed
                    if (!at('>')) error("an unterminated group name");
                    ++pos_;
                } else {
                    error("lookaround is not supported");
                }
            }
            std::string inner = alternation(depth + 1);
            if (!at(')')) error("expected ')'");
            ++pos_;
            return inner;
        }
        if (c == '[') return char_class();
        if (c == '.') {
            ++pos_;
            return set(complement(line_terminators));
        }
        if (c == '\\') {
            ++pos_;
            return set(escape(false));
        }
        if (c == '^' || c == '$') error("anchors are supported only at the ends of the pattern");
        if (c == '*' || c == '+' || c == '?' || c == '{' || c == '}' || c == ']') error(fmt::format("unexpected '{}'", c));
        const uint32_t v = utf8_char();
        return set({{v, v}});
    }

    const std::string& p_;
    size_t pos_ = 0;
};

}  // namespace

std::string regex_to_gbnf(const std::string& pattern) { return RegexParser(pattern).run(); }

}  // namespace waste::grammar
