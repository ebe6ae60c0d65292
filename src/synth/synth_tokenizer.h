// synth_tokenizer.h — the tokenizer files of a synthetic container.
//
// A tiktoken-style rank file (container-v0 §6): ranks 0..255 are the single
// bytes, then merges — first a fixed list of common English pieces (" the",
// "ing", ...), then, for large vocabularies, letter strings made by joining
// two earlier tokens — so every token above 255 is the concatenation of two
// lower-ranked tokens, as byte-pair encoding needs. The specials follow the
// ranks, Kimi's way: [BOS], [EOS], <|end_of_msg|>, <|open|>, <|close|>,
// <|sep|>, <|media_begin|>, <|media_content|>, <|media_pad|>, <|media_end|>,
// then <|reserved_token_ID|> up to the reserved slots. chat.json wraps turns
// in the XTML markup. The files depend on the vocabulary size only, not on
// the seed.
#pragma once

#include <cstdint>
#include <string>

namespace waste::synth {

struct SyntheticTokenizer {
    std::string rank_file;      // tokenizer.model
    std::string specials_json;  // specials.json
    std::string chat_json;      // chat.json
    int64_t ranks = 0;          // = the [BOS] id
};

// vocab = ranks + special_slots; needs ranks >= 256 and special_slots >= 10.
// The named specials come first after the ranks, in a fixed order;
// <|media_pad|> (the image placeholder, vision.md §4) is the ninth.
constexpr int media_pad_special_slot = 8;

SyntheticTokenizer build_tokenizer(int64_t vocab, int special_slots);

}  // namespace waste::synth
