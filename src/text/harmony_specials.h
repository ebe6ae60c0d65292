// harmony_specials.h — the special tokens of tiktoken's o200k_harmony (gpt-oss):
// o200k_base's ranks and pattern plus these, as OpenAI's harmony encoding
// defines them: <|startoftext|> 199998, <|endoftext|> 199999, <|return|>
// 200002, <|constrain|> 200003, <|channel|> 200005, <|start|> 200006,
// <|end|> 200007, <|message|> 200008, <|call|> 200012, <|endofprompt|>
// 200018, and <|reserved_N|> for every other id of 200000..201087.
//
// tiktoken also accepts "<|reserved_200018|>" for 200018 (two names for one
// id); a Tokenizer gives an id one text, and this table gives it gpt-oss's
// tokenizer.json's, <|endofprompt|>.
//
// Deliberately not here: the ranks (o200k_base's rank file) and the pattern
// (pretokenizer.h's o200k).
#pragma once

#include <vector>

#include "text/specials.h"

namespace waste::text {

// In id order.
std::vector<SpecialToken> o200k_harmony_specials();

}  // namespace waste::text
