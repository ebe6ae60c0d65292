#include "grammar/gbnf_parser.h"

#include <cctype>
#include <map>

#include "platform/error.h"

namespace waste::grammar {

namespace {

bool is_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

class Parser {
public:
    explicit Parser(std::string_view text) : text_(text) {}

    Grammar run(const std::string& root) {
        if (text_.size() > max_gbnf_bytes)
            fail(WASTE_ERR_INVALID_ARGUMENT, "grammar: {} bytes of text (at most {})", text_.size(), max_gbnf_bytes);
        skip_space(true);
        while (pos_ < text_.size()) {
            parse_rule();
            skip_space(true);
        }
        for (const auto& [rule, offset] : first_use_)
            if (!builder_.defined(rule))
                fail(WASTE_ERR_INVALID_ARGUMENT, "{}: rule '{}' is used but never defined", where(offset),
                     builder_.name(rule));
        return builder_.finish(root);
    }

private:
    std::string where(size_t offset) const {
        size_t line = 1, column = 1;
        for (size_t i = 0; i < offset && i < text_.size(); ++i) {
            if (text_[i] == '\n') {
                ++line;
                column = 1;
            } else if ((static_cast<unsigned char>(text_[i]) & 0xC0) != 0x80) {
                ++column;  // columns count characters, not UTF-8 continuation bytes
            }
        }
        return fmt::format("grammar line {}:{}", line, column);
    }
    [[noreturn]] void error(const std::string& what) const { error_at(pos_, what); }
    [[noreturn]] void error_at(size_t offset, const std::string& what) const {
        fail(WASTE_ERR_INVALID_ARGUMENT, "{}: {}", where(offset), what);
    }
    std::string found() const {
        if (pos_ >= text_.size()) return "the end of the text";
        const char c = text_[pos_];
        if (c == '\n') return "a newline";
        if (static_cast<unsigned char>(c) < 0x20) return fmt::format("byte 0x{:02X}", static_cast<unsigned char>(c));
        return fmt::format("'{}'", std::string(text_.substr(pos_, 1)));
    }
    bool at(char c) const { return pos_ < text_.size() && text_[pos_] == c; }

    // Spaces, tabs and comments; newlines too when `newlines`.
    void skip_space(bool newlines) {
        while (pos_ < text_.size()) {
            const char c = text_[pos_];
            if (c == ' ' || c == '\t' || (newlines && (c == '\n' || c == '\r'))) {
                ++pos_;
            } else if (c == '#') {
                while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
            } else {
                break;
            }
        }
    }

    std::string parse_name() {
        const size_t start = pos_;
        while (pos_ < text_.size() && is_name_char(text_[pos_])) ++pos_;
        if (pos_ == start) error(fmt::format("expected a rule name, found {}", found()));
        return std::string(text_.substr(start, pos_ - start));
    }

    void parse_rule() {
        const size_t start = pos_;
        const std::string name = parse_name();
        skip_space(false);
        if (text_.substr(pos_, 3) != "::=") error(fmt::format("expected '::=' after rule name '{}', found {}", name, found()));
        pos_ += 3;
        skip_space(true);
        const uint32_t rule = builder_.rule(name);
        if (builder_.defined(rule)) error_at(start, fmt::format("rule '{}' is defined twice", name));
        auto alternatives = parse_alternatives(name, 0);
        builder_.define(rule, std::move(alternatives), where(start));
        skip_space(false);
        if (pos_ < text_.size() && text_[pos_] != '\n' && text_[pos_] != '\r')
            error(fmt::format("expected the end of rule '{}' (a newline), found {}", name, found()));
    }

    std::vector<Sequence> parse_alternatives(const std::string& rule, size_t depth) {
        std::vector<Sequence> out;
        out.push_back(parse_sequence(rule, depth));
        while (at('|')) {
            ++pos_;
            skip_space(true);
            out.push_back(parse_sequence(rule, depth));
        }
        return out;
    }

    Sequence parse_sequence(const std::string& rule, size_t depth) {
        const bool nested = depth > 0;
        Sequence seq;
        while (pos_ < text_.size()) {
            const size_t item_start = pos_;
            const char c = text_[pos_];
            size_t first = seq.size();
            if (c == '"') {
                ++pos_;
                while (!at('"')) {
                    if (pos_ >= text_.size() || text_[pos_] == '\n') error_at(item_start, "unterminated literal");
                    seq.push_back(builder_.literal_char(parse_char()));
                }
                ++pos_;
            } else if (c == '[') {
                seq.push_back(parse_class());
            } else if (c == '.') {
                ++pos_;
                seq.push_back(Item{false, builder_.char_class({{0, max_code_point}}, false)});
            } else if (c == '(') {
                if (depth + 1 > max_group_depth) error(fmt::format("groups nested deeper than {}", max_group_depth));
                ++pos_;
                skip_space(true);
                auto alternatives = parse_alternatives(rule, depth + 1);
                if (!at(')')) error(fmt::format("expected ')' closing the group opened at {}, found {}", where(item_start), found()));
                ++pos_;
                if (alternatives.size() == 1 && alternatives[0].size() == 1) {
                    seq.push_back(alternatives[0][0]);
                } else {
                    const uint32_t group = builder_.generated_rule(rule);
                    builder_.define(group, std::move(alternatives), where(item_start));
                    seq.push_back(Item{true, group});
                }
            } else if (is_name_char(c)) {
                const std::string name = parse_name();
                skip_space(false);
                if (text_.substr(pos_, 3) == "::=") {
                    // the next rule began: the previous one lacked its newline
                    error_at(item_start, fmt::format("rule '{}' begins before the end of rule '{}' (a newline is missing)", name, rule));
                }
                const uint32_t ref = builder_.rule(name);
                first_use_.emplace(ref, item_start);
                seq.push_back(Item{true, ref});
            } else {
                break;
            }
            parse_repetition(rule, item_start, first, seq);
            skip_space(nested);
        }
        return seq;
    }

    // A repetition applies to the last item (a literal's last character in
    // llama.cpp's reading too: "ab"* repeats the whole literal there, so a
    // multi-character literal is wrapped in a rule first).
    void parse_repetition(const std::string& rule, size_t item_start, size_t first, Sequence& seq) {
        skip_space(false);
        if (pos_ >= text_.size()) return;
        const char c = text_[pos_];
        size_t min = 0;
        long long max = -1;
        if (c == '*') {
            ++pos_;
        } else if (c == '+') {
            ++pos_;
            min = 1;
        } else if (c == '?') {
            ++pos_;
            max = 1;
        } else if (c == '{') {
            ++pos_;
            skip_space(false);
            const bool has_min = pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]));
            if (has_min) min = parse_count();
            skip_space(false);
            if (at(',')) {
                ++pos_;
                skip_space(false);
                if (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) max = static_cast<long long>(parse_count());
            } else {
                if (!has_min) error("expected a count in { }");
                max = static_cast<long long>(min);
            }
            skip_space(false);
            if (!at('}')) error(fmt::format("expected '}}' closing the repetition, found {}", found()));
            ++pos_;
        } else {
            return;
        }
        if (seq.size() == first) error_at(item_start, "a repetition of nothing (an empty literal)");
        Item item = seq.back();
        if (seq.size() - first > 1) {  // a multi-character literal: repeat all of it
            const uint32_t literal = builder_.generated_rule(rule);
            builder_.define(literal, {Sequence(seq.begin() + static_cast<long>(first), seq.end())}, where(item_start));
            item = Item{true, literal};
        }
        seq.resize(first);
        builder_.repeat(rule, item, min, max, seq, where(item_start));
    }

    size_t parse_count() {
        size_t value = 0;
        const size_t start = pos_;
        while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
            value = value * 10 + static_cast<size_t>(text_[pos_] - '0');
            if (value > max_repetition_count) error_at(start, fmt::format("a repetition count above {}", max_repetition_count));
            ++pos_;
        }
        return value;
    }

    uint32_t parse_hex(size_t digits) {
        uint32_t value = 0;
        for (size_t i = 0; i < digits; ++i) {
            if (pos_ >= text_.size() || !std::isxdigit(static_cast<unsigned char>(text_[pos_])))
                error(fmt::format("expected {} hex digits in an escape", digits));
            const char h = text_[pos_++];
            value = value * 16 + static_cast<uint32_t>(std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (h | 0x20) - 'a' + 10);
        }
        if (value > max_code_point) error(fmt::format("code point 0x{:X} is above U+10FFFF", value));
        return value;
    }

    // One character of a literal or class: an escape or a UTF-8 character.
    uint32_t parse_char() {
        const size_t start = pos_;
        const auto byte = static_cast<unsigned char>(text_[pos_]);
        if (byte == '\\') {
            ++pos_;
            if (pos_ >= text_.size()) error("an escape at the end of the text");
            const char e = text_[pos_++];
            switch (e) {
                case 'n': return '\n';
                case 'r': return '\r';
                case 't': return '\t';
                case '0': return 0;
                case '\\': case '"': case '[': case ']': case '-': case '^': case '/': case '.': return static_cast<uint32_t>(e);
                case 'x': return parse_hex(2);
                case 'u': return parse_hex(4);
                case 'U': return parse_hex(8);
                default: error_at(start, fmt::format("unknown escape '\\{}'", e));
            }
        }
        size_t length = byte < 0x80 ? 1 : byte >= 0xF0 && byte <= 0xF4 ? 4 : byte >= 0xE0 ? 3 : byte >= 0xC2 && byte < 0xE0 ? 2 : 0;
        if (length == 0 || pos_ + length > text_.size()) error("invalid UTF-8 in the grammar text");
        uint32_t value = length == 1 ? byte : byte & (0x7F >> length);
        for (size_t i = 1; i < length; ++i) {
            const auto next = static_cast<unsigned char>(text_[pos_ + i]);
            if ((next & 0xC0) != 0x80) error("invalid UTF-8 in the grammar text");
            value = (value << 6) | (next & 0x3F);
        }
        static constexpr uint32_t smallest[5] = {0, 0, 0x80, 0x800, 0x10000};
        if (value < smallest[length] || value > max_code_point || (value >= 0xD800 && value <= 0xDFFF))
            error("invalid UTF-8 in the grammar text");
        pos_ += length;
        return value;
    }

    Item parse_class() {
        const size_t start = pos_;
        ++pos_;  // '['
        bool negated = false;
        if (at('^')) {
            negated = true;
            ++pos_;
        }
        std::vector<CharRange> ranges;
        while (!at(']')) {
            if (pos_ >= text_.size() || text_[pos_] == '\n') error_at(start, "unterminated character class");
            const size_t range_start = pos_;
            const uint32_t first = parse_char();
            uint32_t last = first;
            if (at('-') && pos_ + 1 < text_.size() && text_[pos_ + 1] != ']') {
                ++pos_;
                last = parse_char();
                if (last < first)
                    error_at(range_start, fmt::format("character range U+{:04X}-U+{:04X} is backwards", first, last));
            }
            ranges.push_back({first, last});
        }
        ++pos_;
        const uint32_t cls = builder_.char_class(std::move(ranges), negated);
        return Item{false, cls};
    }

    std::string_view text_;
    size_t pos_ = 0;
    GrammarBuilder builder_;
    std::map<uint32_t, size_t> first_use_;  // rule -> offset of its first mention
};

}  // namespace

Grammar parse_gbnf(std::string_view text, const std::string& root) { return Parser(text).run(root); }

}  // namespace waste::grammar
