// nfc_normalizer.h — Unicode Normalization Form C of UTF-8 text, by ICU
// (Debian's libicu-dev: nfc_normalizer_icu.cpp) or, on Windows, by the
// system's NormalizeString (nfc_normalizer_windows.cpp), for
// tokenizer.json files whose normalizer is NFC
// (Qwen's): "e" + U+0301 becomes "é" before pre-tokenization, as Hugging
// Face does it.
//
// Deliberately not here: the other normal forms (no tokenizer.json the
// engine reads uses them; hf_tokenizer_json refuses them) and UTF-8
// validation (the caller's).
#pragma once

#include <string>
#include <string_view>

namespace waste::text {

// Whether text is already NFC (the common case: then nothing is copied).
bool is_nfc(std::string_view text);
// text in NFC; throws WASTE_ERR_INTERNAL should the normaliser fail.
std::string to_nfc(std::string_view text);

}  // namespace waste::text
