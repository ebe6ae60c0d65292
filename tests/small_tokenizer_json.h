// small_tokenizer_json.h — a small Hugging Face tokenizer.json for tests:
// the 256 bytes, a few merged tokens, Qwen's split regex and one added
// token, in the shape of the real files.
//
// Deliberately not here: real files (the oracle's packages).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace waste_test {

// The byte-level spelling of bytes (GPT-2's bytes_to_unicode, written out
// again here, independent of src/text/byte_level.cpp).
std::string byte_level(std::string_view bytes);

// The 256 bytes (id = byte), then `tokens` from id 256 on, merges ("left
// right", raw bytes) as given, Qwen's split regex, and the added special
// token "<|end|>" with the next id.
nlohmann::json small_tokenizer(const std::vector<std::string>& tokens, const std::vector<std::string>& merges);

}  // namespace waste_test
