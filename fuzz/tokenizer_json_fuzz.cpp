// tokenizer_json_fuzz.cpp — libFuzzer target over Hugging Face tokenizer.json
// reading (src/text/hf_tokenizer_json) and the tokenizer it builds.
//
// The input's first line is a text to tokenise; the rest is tokenizer.json.
// A file is either refused with a waste::Error naming the component, or it
// builds a tokenizer that must then encode the text (plain and markup mode,
// when it is valid UTF-8) and decode every id it produced. No round-trip
// check: a normaliser (NFC) rightly changes the text.
// Seeds: fuzz/seeds/tokenizer_json_fuzz/ (small byte-level BPE files).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "platform/error.h"
#include "text/hf_tokenizer_json.h"
#include "text/tokenizer.h"
#include "text/utf8.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    const size_t newline = input.find('\n');
    if (newline == std::string_view::npos) return 0;
    const std::string_view text = input.substr(0, newline);
    const std::string_view json = input.substr(newline + 1);
    try {
        const auto tokenizer = waste::text::parse_tokenizer_json(json, "fuzz/tokenizer.json");
        if (waste::text::find_invalid_utf8(text) != waste::text::utf8_valid) return 0;
        for (bool markup : {false, true}) {
            const std::vector<int32_t> ids = tokenizer->encode(text, markup);
            (void)tokenizer->decode(ids, markup);
        }
    } catch (const waste::Error&) {
        // refused with a message: the expected outcome for most inputs
    }
    return 0;
}
