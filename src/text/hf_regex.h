// hf_regex.h — a tokenizer.json Split regex (the Oniguruma dialect Hugging
// Face's tokenizers compiles) rewritten for PCRE2 (UTF + UCP) so that it
// matches the same pieces.
//
// The rewrites, each exact:
// - `\s` is Oniguruma's Unicode White_Space; PCRE2's UCP \s also matches
//   U+180E. It is spelled out as the White_Space list (as
//   pretokenizer_patterns.cpp does for tiktoken's), `\S` as its complement.
// - `\p{Name}` with a script name (anything but a general category such as
//   L, Lu, N, P, S, M, Z, C and their subcategories): Oniguruma's is the
//   Script property, PCRE2's (10.40 on) Script_Extensions, so it becomes
//   `\p{sc:Name}`.
// - `\d` / `\D` are \p{Nd} / \P{Nd} in both; `\uXXXX` becomes `\x{XXXX}`;
//   `\v` becomes U+000B (Oniguruma's one character; PCRE2's \v is a class).
// Refused, naming the pattern and the offset, rather than risk a different
// split: other letter escapes (`\w \W \b \B \h \H \A \z \Z \G \K \X \R`),
// backreferences, `\S` inside a character class, an unescaped '[' inside a
// class (Oniguruma nests classes and POSIX brackets there), `&&`, and a
// pattern over max_hf_regex_bytes.
//
// Deliberately not here: compiling (pretokenizer.h) and the pipeline
// (hf_pipeline.h).
#pragma once

#include <string>
#include <string_view>

namespace waste::text {

// Why: the real Split patterns are under 400 bytes.
inline constexpr size_t max_hf_regex_bytes = 4096;

// Throws WASTE_ERR_FORMAT "<where>: ..." for what it refuses.
std::string pcre2_from_hf_regex(std::string_view pattern, const std::string& where);

}  // namespace waste::text
