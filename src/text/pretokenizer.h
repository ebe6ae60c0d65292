// pretokenizer.h — splitting text into the pieces byte-pair encoding runs on,
// with a tiktoken-family regex compiled by PCRE2 (UTF + UCP, JIT).
//
// The patterns are tiktoken's `pat_str`s, rewritten from the Rust regex
// dialect tiktoken compiles into PCRE2 without changing what they match
// (pretokenizer_patterns.cpp says how, line by line). Matching follows
// tiktoken's find_iter: leftmost match, first alternative that matches,
// text between matches skipped (none of these patterns leaves any).
//
// Deliberately not here: special tokens (a caller splits them out first)
// and UTF-8 validation (the caller's; the matcher assumes valid text).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace waste::text {

enum class PatternKind {
    kimi,    // Kimi's tokenization_kimi.py (models.md §9)
    o200k,   // tiktoken o200k_base (and o200k_harmony)
    cl100k,  // tiktoken cl100k_base
    gpt2,    // tiktoken r50k_base / p50k_base / gpt2
};

// "kimi", "o200k" (or "o200k_base"), "cl100k" (or "cl100k_base"), "gpt2"
// (or "r50k_base", "p50k_base"); nullopt for anything else.
std::optional<PatternKind> parse_pattern_name(std::string_view name);
const char* pattern_name(PatternKind kind);
// The names parse_pattern_name accepts, for messages: "kimi, o200k, ...".
const char* pattern_names();

// The PCRE2 source of a pattern.
std::string_view pattern_source(PatternKind kind);
// Kimi's pattern with the class intersections written as models.md §9 has
// them, `(?:(?!\p{Han})[A])`: slower, and the tests check that it splits
// exactly as pattern_source(kimi) does.
std::string_view kimi_pattern_with_lookahead();

class Pretokenizer {
public:
    explicit Pretokenizer(PatternKind kind);
    // Any PCRE2 source (for tests); throws naming the pattern on a compile error.
    Pretokenizer(std::string_view source, PatternKind reported_kind);
    // Any PCRE2 source, named `label` in errors (a tokenizer.json's Split:
    // hf_pretokenizer.h); kind() is meaningless for it.
    Pretokenizer(std::string_view source, std::string label);
    ~Pretokenizer();
    Pretokenizer(const Pretokenizer&) = delete;
    Pretokenizer& operator=(const Pretokenizer&) = delete;

    PatternKind kind() const { return kind_; }
    bool jit() const { return jit_; }

    // Walks the pieces of one valid UTF-8 text. The Pretokenizer is shared
    // between threads; each Cursor is one thread's.
    class Cursor {
    public:
        Cursor(const Pretokenizer& pretokenizer, std::string_view text);
        ~Cursor();
        Cursor(const Cursor&) = delete;
        Cursor& operator=(const Cursor&) = delete;
        // The next piece, or false at the end.
        bool next(std::string_view& piece);
        // Starts over on another text, keeping the match buffer.
        void reset(std::string_view text) {
            text_ = text;
            position_ = 0;
        }

    private:
        const Pretokenizer& owner_;
        std::string_view text_;
        size_t position_ = 0;
        void* match_data_ = nullptr;  // pcre2_match_data_8
    };

private:
    void compile(std::string_view source);
    PatternKind kind_;
    std::string label_;  // names the pattern in errors
    void* code_ = nullptr;  // pcre2_code_8
    bool jit_ = false;
};

}  // namespace waste::text
