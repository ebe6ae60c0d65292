// pretokenizer_patterns.cpp — the pre-tokenizer regexes, converted from the
// Rust regex dialect tiktoken compiles to PCRE2 (UTF + UCP).
//
// The originals, as tiktoken (and the npm oracle in tools/tiktoken-oracle)
// has them:
//   o200k:  [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//          |[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//          |\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
//   cl100k: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*
//          |\s*[\r\n]+|\s+(?!\S)|\s+
//   gpt2:   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//   kimi:   models.md §9 (o200k's shape, with [\p{Han}]+ first, Han removed
//          from the letter classes, and no '/' after punctuation).
//
// Two rewrites, each exact:
// - `\s`: Rust's is Unicode White_Space; PCRE2's UCP \s also matches U+180E
//   (MONGOLIAN VOWEL SEPARATOR, in \h for PCRE2, not White_Space since
//   Unicode 6.3). So \s is spelled out as the White_Space list (stable since
//   6.3), and \S as its complement.
// - Kimi's intersections `[A&&[^\p{Han}]]`: PCRE2 10.42 has no class
//   intersection. models.md §9 writes them `(?:(?!\p{Han})[A])`, which is
//   exact but a lookahead per character. Here they are one negated class
//   instead: the general categories partition the code points, so
//   (Lu|Lt|Lm|Lo|M) minus Han = not (Ll|N|P|S|Z|C|Han), and
//   (Ll|Lm|Lo|M) minus Han = not (Lu|Lt|N|P|S|Z|C|Han). The lookahead form is
//   kept (kimi_pattern_with_lookahead) and the tests check both split alike.
// - `\p{Han}`: for Rust regex a bare script name is the Script property; for
//   PCRE2 (10.40 on) it is Script_Extensions, which adds the CJK punctuation
//   "、。" and more (found by the tiktoken oracle: "。[" is one piece there).
//   So it is spelled `\p{sc:Han}`.
//
// Known difference: the Unicode version. PCRE2 10.42 (Debian 12) has Unicode
// 14.0 tables; the tiktoken npm 1.0.22 build has 16.0. The 9,458 code points
// assigned in 15.0-16.0 (CJK Ext. H/I, Kawi, Kaktovik numerals, Garay, ...)
// are unassigned (Cn) here, so text containing them can split differently.
// Probes against the oracle: every code point in letter, digit, space and
// doubled contexts with the real o200k/cl100k ranks differed only at
// U+1D2C0-1D2D3; the 52,951 code points PCRE2 calls unassigned below U+20000
// and in U+2A000-323FF, with a rank file that exposes piece boundaries,
// differed at exactly those 9,458.
#include "text/pretokenizer.h"

namespace waste::text {
namespace {

#define WASTE_WS "\\x{09}-\\x{0D}\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}"
#define WASTE_SPACE "[" WASTE_WS "]"
#define WASTE_NOT_SPACE "[^" WASTE_WS "]"
#define WASTE_CONTRACTION R"((?i:'s|'t|'re|'ve|'m|'ll|'d))"
#define WASTE_UPPER R"([\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}])"
#define WASTE_LOWER R"([\p{Ll}\p{Lm}\p{Lo}\p{M}])"
#define WASTE_UPPER_NO_HAN R"([^\p{Ll}\p{N}\p{P}\p{S}\p{Z}\p{C}\p{sc:Han}])"
#define WASTE_LOWER_NO_HAN R"([^\p{Lu}\p{Lt}\p{N}\p{P}\p{S}\p{Z}\p{C}\p{sc:Han}])"
#define WASTE_UPPER_NO_HAN_LOOKAHEAD R"((?:(?!\p{sc:Han})[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]))"
#define WASTE_LOWER_NO_HAN_LOOKAHEAD R"((?:(?!\p{sc:Han})[\p{Ll}\p{Lm}\p{Lo}\p{M}]))"
#define WASTE_TAIL(after_punctuation)                                                                          \
    R"(|\p{N}{1,3}| ?[^)" WASTE_WS R"(\p{L}\p{N}]+)" after_punctuation "|" WASTE_SPACE R"(*[\r\n]+|)" WASTE_SPACE \
    "+(?!" WASTE_NOT_SPACE ")|" WASTE_SPACE "+"

constexpr const char o200k_source[] =
    R"([^\r\n\p{L}\p{N}]?)" WASTE_UPPER "*" WASTE_LOWER "+" WASTE_CONTRACTION "?"
    R"(|[^\r\n\p{L}\p{N}]?)" WASTE_UPPER "+" WASTE_LOWER "*" WASTE_CONTRACTION "?"
    WASTE_TAIL(R"([\r\n/]*)");

constexpr const char cl100k_source[] =
    WASTE_CONTRACTION R"(|[^\r\n\p{L}\p{N}]?\p{L}+)" WASTE_TAIL(R"([\r\n]*)");

constexpr const char gpt2_source[] =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^)" WASTE_WS R"(\p{L}\p{N}]+|)" WASTE_SPACE
    "+(?!" WASTE_NOT_SPACE ")|" WASTE_SPACE "+";

#define WASTE_KIMI(upper, lower)                                                          \
    R"([\p{sc:Han}]+)"                                                                    \
    R"(|[^\r\n\p{L}\p{N}]?)" upper "*" lower "+" WASTE_CONTRACTION "?"                    \
    R"(|[^\r\n\p{L}\p{N}]?)" upper "+" lower "*" WASTE_CONTRACTION "?" WASTE_TAIL(R"([\r\n]*)")

constexpr const char kimi_source[] = WASTE_KIMI(WASTE_UPPER_NO_HAN, WASTE_LOWER_NO_HAN);
constexpr const char kimi_lookahead_source[] = WASTE_KIMI(WASTE_UPPER_NO_HAN_LOOKAHEAD, WASTE_LOWER_NO_HAN_LOOKAHEAD);

}  // namespace

std::optional<PatternKind> parse_pattern_name(std::string_view name) {
    if (name == "kimi") return PatternKind::kimi;
    if (name == "o200k" || name == "o200k_base" || name == "o200k_harmony") return PatternKind::o200k;
    if (name == "cl100k" || name == "cl100k_base") return PatternKind::cl100k;
    if (name == "gpt2" || name == "r50k_base" || name == "p50k_base" || name == "p50k_edit") return PatternKind::gpt2;
    return std::nullopt;
}

const char* pattern_name(PatternKind kind) {
    switch (kind) {
        case PatternKind::kimi: return "kimi";
        case PatternKind::o200k: return "o200k";
        case PatternKind::cl100k: return "cl100k";
        case PatternKind::gpt2: return "gpt2";
    }
    return "unknown";
}

const char* pattern_names() { return "kimi, o200k, cl100k, gpt2 (also o200k_base, cl100k_base, r50k_base, p50k_base)"; }

std::string_view pattern_source(PatternKind kind) {
    switch (kind) {
        case PatternKind::kimi: return kimi_source;
        case PatternKind::o200k: return o200k_source;
        case PatternKind::cl100k: return cl100k_source;
        case PatternKind::gpt2: return gpt2_source;
    }
    return kimi_source;
}

std::string_view kimi_pattern_with_lookahead() { return kimi_lookahead_source; }

}  // namespace waste::text
