// lexer.h — template source to tokens, with Jinja2's whitespace rules under
// Hugging Face's settings: trim_blocks (the first newline after a block or
// comment tag goes), lstrip_blocks (blanks before a block or comment tag on
// its own line go; `{%+` keeps them), `-` on either side of a tag strips all
// whitespace on that side, newlines are normalised to \n and one trailing
// newline of the source is dropped (keep_trailing_newline=False).
//
// Deliberately not here: what the tokens mean (parser.h). `{% raw %}` and
// line statements are refused, not lexed.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace waste::tmpl {

enum class TokenType : uint8_t {
    data,            // template text, already whitespace-controlled
    variable_begin,  // {{
    variable_end,    // }}
    block_begin,     // {%
    block_end,       // %}
    name,
    string,   // text is the decoded value
    integer,  // text is the digits (underscores removed)
    floating,
    operator_,  // text is the operator: + - * / // ** % ~ == != < <= > >= = . : | , ( ) [ ] { }
    end_of_input,
};

struct Token {
    TokenType type;
    std::string text;
    int line;
};

struct LexerLimits {
    size_t max_source_bytes = 1 << 20;  // real templates are under 20 KB
    size_t max_tokens = 1 << 20;
};

// Throws waste::Error naming the template and line of a malformed tag.
std::vector<Token> tokenize(std::string_view source, const std::string& template_name, const LexerLimits& limits = {});

}  // namespace waste::tmpl
