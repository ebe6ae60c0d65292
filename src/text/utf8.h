// utf8.h — the UTF-8 questions the tokenizer asks: is this text valid
// (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF), how
// many trailing bytes of a byte stream are the unfinished start of a
// character (for the streaming detokenizer), and where a run of whitespace
// at either end of a text ends (an added token's lstrip/rstrip).
//
// Deliberately not here: other character classes — PCRE2 owns the
// pre-tokenizers' Unicode properties.
#pragma once

#include <cstddef>
#include <string_view>

namespace waste::text {

inline constexpr size_t utf8_valid = static_cast<size_t>(-1);

// The byte offset of the first byte that does not start a valid UTF-8
// sequence, or utf8_valid.
size_t find_invalid_utf8(std::string_view text);

// 0..3: how many bytes at the end of bytes are a proper prefix of a valid
// UTF-8 sequence that more bytes could still complete. Bytes that can never
// become valid (a stray continuation byte, 0xFF, "\xE0\x80") count 0.
size_t incomplete_utf8_tail(std::string_view bytes);

// Valid UTF-8 only. The byte offset where the text's leading whitespace
// ends, and where its trailing whitespace starts (text.size() when none):
// Unicode's White_Space property, which Rust's char::is_whitespace tests and
// Hugging Face's tokenizers strip with (U+0009-000D, U+0020, U+0085, U+00A0,
// U+1680, U+2000-200A, U+2028, U+2029, U+202F, U+205F, U+3000).
size_t whitespace_prefix_end(std::string_view text);
size_t whitespace_suffix_start(std::string_view text);

}  // namespace waste::text
