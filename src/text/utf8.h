// utf8.h — the two UTF-8 questions the tokenizer asks: is this text valid
// (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF), and
// how many trailing bytes of a byte stream are the unfinished start of a
// character (for the streaming detokenizer).
//
// Deliberately not here: decoding to code points or character classes —
// PCRE2 owns every Unicode property question.
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

}  // namespace waste::text
