// byte_level.h — GPT-2's byte-level alphabet, as Hugging Face's ByteLevel
// pre-tokenizer and decoder use it: every byte is written as one printable
// code point (the printable Latin-1 bytes as themselves, the other 68 as
// U+0100.. in byte order), so that a tokenizer.json's vocab and merges are
// strings. This turns those strings back into the bytes they stand for.
//
// Deliberately not here: reading the vocab (hf_tokenizer_json.h).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace waste::text {

// The bytes a byte-level string stands for; nullopt when it holds invalid
// UTF-8 or a code point outside the alphabet (such a string is not a
// byte-level token: a special's text in the vocab, for instance).
std::optional<std::string> bytes_of_byte_level(std::string_view mapped);

}  // namespace waste::text
