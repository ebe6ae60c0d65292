// hf_tokenizer_json.h — building a Tokenizer from a Hugging Face
// tokenizer.json: byte-level BPE (Qwen3, DeepSeek-V3, gpt-oss and the
// like).
//
// What is read, and the only shapes accepted (anything else is refused
// with WASTE_ERR_UNSUPPORTED naming the component and its value, never
// tokenised approximately):
// - model: type "BPE"; vocab {token: id}; merges as "a b" strings or
//   ["a", "b"] pairs (a merge's priority is its place in the list);
//   ignore_merges; byte_fallback false; dropout null; no subword prefix or
//   suffix. Every vocab token is a byte-level string (byte_level.h) except
//   added tokens that the vocab also lists.
// - normalizer: null, NFC, or a Sequence of those.
// - pre_tokenizer: ByteLevel (add_prefix_space false, use_regex false) last,
//   after any number of Split (a Regex pattern, behavior "Isolated", invert
//   false), alone or in a Sequence.
// - added_tokens: id, content, special, normalized, lstrip and rstrip (the
//   whitespace beside a match is taken into the token: specials.h's split);
//   single_word must be false (the reference here ignores it, so an
//   implementation could not be checked).
// - decoder: ByteLevel. post_processor: null, ByteLevel, TemplateProcessing
//   or a Sequence of them — read but not applied: WASTE encodes as Hugging
//   Face's encode(add_special_tokens=False) does; the chat template places
//   BOS. truncation and padding: null.
//
// The file is hostile input: its size, the vocab, merges and added-token
// counts, token lengths and regex lengths are bounded; a merge must join two
// vocab tokens into a third; ids must be in range and unique.
//
// Deliberately not here: the encoding itself (hf_pipeline.h, tokenizer.h)
// and finding the file in a container (tokenizer_loader.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "text/tokenizer.h"

namespace waste::text {

// Bounds (why: gpt-oss's tokenizer.json, the largest, is 27.9 MB with
// 199,998 vocab tokens, 446,189 merges and 21 added tokens).
inline constexpr uint64_t max_tokenizer_json_bytes = uint64_t{128} << 20;
inline constexpr size_t max_vocab_entries = size_t{1} << 22;

struct TokenizerIds {
    int32_t bos = -1;  // -1: none
    int32_t eos = -1;
    std::vector<int32_t> eos_ids;  // every id that ends a generation (Tokenizer::eos_ids); eos added first
    int32_t model_vocab = 0;  // 0: none (tokenizer.h)
};

// `where` names the file in errors ("model.waste/tokenizer.json").
std::shared_ptr<const Tokenizer> parse_tokenizer_json(std::string_view text, const std::string& where,
                                                      const TokenizerIds& ids = {});

}  // namespace waste::text
