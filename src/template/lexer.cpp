// lexer.cpp — see lexer.h. Follows the order of Jinja2's own lexer rules:
// at every position inside a tag the end marker is tried first (unless a
// bracket is open), then whitespace, numbers, names, strings, operators.
#include "template/lexer.h"

#include <cctype>

#include "platform/error.h"
#include "template/python_text.h"

namespace waste::tmpl {

namespace {

class Lexer {
public:
    Lexer(std::string source, const std::string& name, const LexerLimits& limits)
        : source_(std::move(source)), name_(name), limits_(limits) {}

    std::vector<Token> run();

private:
    [[noreturn]] void error(const std::string& message) const {
        fail(WASTE_ERR_INVALID_ARGUMENT, "template {} line {}: {}", name_, line_, message);
    }
    void push(TokenType type, std::string text) {
        if (tokens_.size() >= limits_.max_tokens) error(fmt::format("more than {} tokens", limits_.max_tokens));
        tokens_.push_back(Token{type, std::move(text), line_});
    }
    void advance_to(size_t position) {
        for (size_t i = pos_; i < position; ++i)
            if (source_[i] == '\n') ++line_;
        pos_ = position;
    }
    // Skips Python's \s* (unicode whitespace) after a `-` end marker.
    void skip_whitespace();
    void lex_text_before(size_t tag_at, char kind, char sign);
    void lex_comment();
    void lex_tag(bool variable);
    bool try_end_marker(bool variable);
    void lex_string();
    void lex_number();

    std::string source_;
    const std::string& name_;
    LexerLimits limits_;
    std::vector<Token> tokens_;
    size_t pos_ = 0;
    int line_ = 1;
    bool line_starting_ = true;  // the last match ended with a newline (lstrip_blocks)
};

void Lexer::skip_whitespace() {
    while (pos_ < source_.size()) {
        const auto byte = static_cast<unsigned char>(source_[pos_]);
        if (byte < 0x80) {
            if (!is_python_space(byte)) return;
            advance_to(pos_ + 1);
            continue;
        }
        // a multi-byte whitespace character (U+0085, U+00A0, U+2000..., U+3000)
        size_t length = (byte & 0xE0) == 0xC0 ? 2 : (byte & 0xF0) == 0xE0 ? 3 : (byte & 0xF8) == 0xF0 ? 4 : 1;
        if (pos_ + length > source_.size()) return;
        const auto points = decode_utf8(std::string_view(source_).substr(pos_, length));
        if (points.size() != 1 || !is_python_space(points[0])) return;
        advance_to(pos_ + length);
    }
}

void Lexer::lex_text_before(size_t tag_at, char kind, char sign) {
    std::string text = source_.substr(pos_, tag_at - pos_);
    if (sign == '-') {
        text = python_strip(text, std::nullopt, false, true);
    } else if (sign != '+' && kind != '{') {
        const size_t newline = text.rfind('\n');
        const size_t line_start = newline == std::string::npos ? 0 : newline + 1;
        if ((line_start > 0 || line_starting_) && line_start < text.size()) {
            const std::string_view tail = std::string_view(text).substr(line_start);
            bool blank = true;
            for (char32_t c : decode_utf8(tail))
                if (!is_python_space(c)) blank = false;
            if (blank) text.resize(line_start);
        }
    }
    if (!text.empty()) push(TokenType::data, std::move(text));
}

void Lexer::lex_comment() {
    const size_t end = source_.find("#}", pos_);
    if (end == std::string::npos) error("unclosed comment (no matching '#}')");
    const char sign = end > pos_ && (source_[end - 1] == '-' || source_[end - 1] == '+') ? source_[end - 1] : 0;
    advance_to(end + 2);
    if (sign == '-') skip_whitespace();
    else if (sign == 0 && pos_ < source_.size() && source_[pos_] == '\n') advance_to(pos_ + 1);
    line_starting_ = pos_ > 0 && source_[pos_ - 1] == '\n';
}

bool Lexer::try_end_marker(bool variable) {
    const char* marker = variable ? "}}" : "%}";
    size_t at = pos_;
    char sign = 0;
    if (at < source_.size() && (source_[at] == '-' || source_[at] == '+')) {
        if (source_.compare(at + 1, 2, marker) != 0) return false;
        sign = source_[at];
        ++at;
    } else if (source_.compare(at, 2, marker) != 0) {
        return false;
    }
    if (variable && sign == '+') return false;  // `+}}` is not an end marker in Jinja2
    advance_to(at + 2);
    push(variable ? TokenType::variable_end : TokenType::block_end, "");
    if (sign == '-') skip_whitespace();
    else if (!variable && sign == 0 && pos_ < source_.size() && source_[pos_] == '\n') advance_to(pos_ + 1);
    line_starting_ = pos_ > 0 && source_[pos_ - 1] == '\n';
    return true;
}

void Lexer::lex_string() {
    const char quote = source_[pos_];
    size_t i = pos_ + 1;
    std::string value;
    while (true) {
        if (i >= source_.size()) error("unterminated string literal");
        const char c = source_[i];
        if (c == quote) break;
        if (c != '\\') { value.push_back(c); ++i; continue; }
        if (i + 1 >= source_.size()) error("unterminated string literal");
        const char e = source_[i + 1];
        i += 2;
        auto hex = [&](int digits) {
            if (i + digits > source_.size()) error("truncated \\x/\\u escape in a string literal");
            uint32_t code = 0;
            for (int k = 0; k < digits; ++k) {
                const char h = source_[i + k];
                if (!std::isxdigit(static_cast<unsigned char>(h))) error("malformed \\x/\\u escape in a string literal");
                code = code * 16 + static_cast<uint32_t>(std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (std::tolower(h) - 'a' + 10));
            }
            i += digits;
            if (code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) error("escape of a surrogate or out-of-range code point");
            append_utf8(value, code);
        };
        switch (e) {
        case '\n': break;
        case '\\': value.push_back('\\'); break;
        case '\'': value.push_back('\''); break;
        case '"': value.push_back('"'); break;
        case 'a': value.push_back('\a'); break;
        case 'b': value.push_back('\b'); break;
        case 'f': value.push_back('\f'); break;
        case 'n': value.push_back('\n'); break;
        case 'r': value.push_back('\r'); break;
        case 't': value.push_back('\t'); break;
        case 'v': value.push_back('\v'); break;
        case 'x': hex(2); break;
        case 'u': hex(4); break;
        case 'U': hex(8); break;
        case 'N': error("\\N{...} escapes are not supported");
        default:
            if (e >= '0' && e <= '7') {
                uint32_t code = static_cast<uint32_t>(e - '0');
                for (int k = 0; k < 2 && i < source_.size() && source_[i] >= '0' && source_[i] <= '7'; ++k, ++i)
                    code = code * 8 + static_cast<uint32_t>(source_[i] - '0');
                append_utf8(value, code);
            } else if (static_cast<unsigned char>(e) >= 0x80) {
                error("a backslash before a non-ASCII character is not supported");
            } else {
                value.push_back('\\');
                value.push_back(e);
            }
        }
    }
    advance_to(i + 1);
    push(TokenType::string, std::move(value));
}

void Lexer::lex_number() {
    auto digits_at = [&](size_t at) {
        size_t j = at;
        while (j < source_.size() && (std::isdigit(static_cast<unsigned char>(source_[j])) ||
                                      (source_[j] == '_' && j > at && j + 1 < source_.size() &&
                                       std::isdigit(static_cast<unsigned char>(source_[j + 1])))))
            ++j;
        return j;
    };
    size_t end = digits_at(pos_);
    bool is_float = false;
    const bool after_dot = !tokens_.empty() && tokens_.back().type == TokenType::operator_ && tokens_.back().text == ".";
    if (!after_dot && end + 1 < source_.size() && source_[end] == '.' && std::isdigit(static_cast<unsigned char>(source_[end + 1]))) {
        end = digits_at(end + 1);
        is_float = true;
    }
    if (!after_dot && end < source_.size() && (source_[end] == 'e' || source_[end] == 'E')) {
        size_t j = end + 1;
        if (j < source_.size() && (source_[j] == '+' || source_[j] == '-')) ++j;
        if (j < source_.size() && std::isdigit(static_cast<unsigned char>(source_[j]))) {
            end = digits_at(j);
            is_float = true;
        }
    }
    std::string text;
    for (size_t j = pos_; j < end; ++j)
        if (source_[j] != '_') text.push_back(source_[j]);
    advance_to(end);
    push(is_float ? TokenType::floating : TokenType::integer, std::move(text));
}

void Lexer::lex_tag(bool variable) {
    int depth = 0;  // open brackets: end markers inside them are not ends
    const int tag_line = line_;
    while (true) {
        if (pos_ >= source_.size()) {
            line_ = tag_line;
            error(variable ? "unclosed '{{' (no matching '}}')" : "unclosed '{%' (no matching '%}')");
        }
        if (depth == 0 && try_end_marker(variable)) return;
        const char c = source_[pos_];
        if (std::isspace(static_cast<unsigned char>(c))) { advance_to(pos_ + 1); continue; }
        if (std::isdigit(static_cast<unsigned char>(c))) { lex_number(); continue; }
        if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
            size_t j = pos_;
            while (j < source_.size() && (std::isalnum(static_cast<unsigned char>(source_[j])) || source_[j] == '_')) ++j;
            std::string name = source_.substr(pos_, j - pos_);
            advance_to(j);
            push(TokenType::name, std::move(name));
            continue;
        }
        if (c == '\'' || c == '"') { lex_string(); continue; }
        static const char* const two_char[] = {"//", "**", "==", "!=", ">=", "<="};
        std::string op;
        for (const char* candidate : two_char)
            if (source_.compare(pos_, 2, candidate) == 0) op = candidate;
        if (op.empty()) {
            if (std::string_view("+-*/%~[](){}<>=.:|,;").find(c) == std::string_view::npos)
                error(fmt::format("unexpected character '{}'", c));
            op = std::string(1, c);
        }
        if (op == "(" || op == "[" || op == "{") {
            if (++depth > 256) error("brackets nested deeper than 256");
        } else if (op == ")" || op == "]" || op == "}") {
            if (depth == 0) error(fmt::format("unexpected '{}'", op));
            --depth;
        }
        advance_to(pos_ + op.size());
        push(TokenType::operator_, std::move(op));
    }
}

std::vector<Token> Lexer::run() {
    while (pos_ < source_.size()) {
        size_t tag_at = pos_;
        char kind = 0;
        while (true) {
            tag_at = source_.find('{', tag_at);
            if (tag_at == std::string::npos || tag_at + 1 >= source_.size()) { tag_at = std::string::npos; break; }
            const char next = source_[tag_at + 1];
            if (next == '{' || next == '%' || next == '#') { kind = next; break; }
            ++tag_at;
        }
        if (tag_at == std::string::npos) {
            push(TokenType::data, source_.substr(pos_));
            advance_to(source_.size());
            break;
        }
        const char sign = tag_at + 2 < source_.size() && (source_[tag_at + 2] == '-' || source_[tag_at + 2] == '+') ? source_[tag_at + 2] : 0;
        lex_text_before(tag_at, kind, sign);
        advance_to(tag_at + 2 + (sign ? 1 : 0));
        if (kind == '#') { lex_comment(); continue; }
        if (kind == '%') {
            // Jinja2 matches {% raw %} before any other block.
            size_t j = pos_;
            while (j < source_.size() && std::isspace(static_cast<unsigned char>(source_[j]))) ++j;
            if (source_.compare(j, 3, "raw") == 0 && (j + 3 >= source_.size() || !std::isalnum(static_cast<unsigned char>(source_[j + 3]))))
                error("{% raw %} blocks are not supported");
        }
        push(kind == '{' ? TokenType::variable_begin : TokenType::block_begin, "");
        lex_tag(kind == '{');
    }
    push(TokenType::end_of_input, "");
    return std::move(tokens_);
}

}  // namespace

std::vector<Token> tokenize(std::string_view source, const std::string& template_name, const LexerLimits& limits) {
    if (source.size() > limits.max_source_bytes)
        fail(WASTE_ERR_INVALID_ARGUMENT, "template {}: {} bytes is more than the limit of {}", template_name, source.size(),
             limits.max_source_bytes);
    // Newlines as Jinja2 normalises them, then keep_trailing_newline=False.
    std::string normalised;
    normalised.reserve(source.size());
    for (size_t i = 0; i < source.size(); ++i) {
        if (source[i] == '\r') {
            normalised.push_back('\n');
            if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
        } else {
            normalised.push_back(source[i]);
        }
    }
    if (!normalised.empty() && normalised.back() == '\n') normalised.pop_back();
    return Lexer(std::move(normalised), template_name, limits).run();
}

}  // namespace waste::tmpl
