// base64.h — strict standard base64 (RFC 4648 §4, with padding).
#pragma once

#include <string>
#include <string_view>

namespace waste::text {

// Appends the decoded bytes to out; false (out then holds a partial result)
// on anything but canonical padded base64: a wrong length, a character
// outside the alphabet, misplaced '=', or bits set in the padding (so that
// one byte string has one spelling).
bool decode_base64(std::string_view text, std::string& out);

// The canonical padded spelling of `bytes` (what decode_base64 accepts).
std::string encode_base64(std::string_view bytes);

}  // namespace waste::text
