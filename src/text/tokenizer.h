// tokenizer.h — a tiktoken-family tokenizer: rank table + pre-tokenizer
// regex + special tokens, text <-> ids.
//
// encode(text, markup): the text must be valid UTF-8 (anything else is
// refused naming the byte offset; tiktoken cannot be handed invalid text
// either). Plain mode (markup = false) treats every byte as content, so
// "<|open|>" typed by a user is ordinary text; markup mode first cuts the
// text at special tokens (specials.h) and encodes the segments between them
// in plain mode, which is exactly tiktoken's encode(allowed_special="all").
// Content and markup must be encoded separately (models.md §9).
//
// decode(ids, markup): the concatenated bytes of the tokens; in markup mode
// a special token contributes its text, in plain mode nothing (a reader of
// generated text does not see control tokens). An id that is neither a rank
// nor a special is refused, naming it — unless it is a reserved id: a
// model's vocabulary may be larger than its tokenizer (K3's embedding has
// 163,840 rows for 163,584 ranks and its specials), and every id below the
// model's vocabulary is something the model can generate, so such an id
// decodes to nothing.
//
// A Hugging Face tokenizer.json tokenizer is the same object with an
// HfPipeline (hf_pipeline.h) in place of the tiktoken pattern and merge
// rule: the rank table is its vocab (id -> bytes), the specials are its
// added tokens, and plain segments go through the pipeline (normaliser,
// splits, merge-priority BPE). Markup mode first cuts at the added tokens
// that match on raw text, as tiktoken's path does; the pipeline cuts at the
// ones that match on normalised text.
//
// Immutable once built, so one Tokenizer serves any number of threads.
//
// Deliberately not here: reading files and choosing the pattern
// (tokenizer_loader.h, hf_tokenizer_json.h), streaming output
// (detokenizer.h).
#pragma once

#include <algorithm>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "text/hf_pipeline.h"
#include "text/pretokenizer.h"
#include "text/rank_table.h"
#include "text/specials.h"

namespace waste::text {

class Tokenizer {
public:
    // Refuses a special whose id is also a rank. bos/eos: -1 = none.
    // model_vocab: the vocabulary of the model this tokenizer serves (0 =
    // none); ids below it that are neither ranks nor specials are reserved.
    Tokenizer(RankTable ranks, std::vector<SpecialToken> specials, PatternKind pattern, int32_t bos = -1,
              int32_t eos = -1, int32_t model_vocab = 0);
    // A tokenizer.json's: vocab, added tokens, pipeline.
    Tokenizer(RankTable vocab, std::vector<SpecialToken> added_tokens, std::shared_ptr<const HfPipeline> pipeline,
              int32_t bos = -1, int32_t eos = -1, int32_t model_vocab = 0);

    void encode(std::string_view text, bool markup, std::vector<int32_t>& out) const;
    std::vector<int32_t> encode(std::string_view text, bool markup) const;
    void decode(std::span<const int32_t> ids, bool markup, std::string& out) const;
    std::string decode(std::span<const int32_t> ids, bool markup) const;

    // The bytes of one token (a special's text for a special; nothing for a
    // reserved id); throws WASTE_ERR_INVALID_ARGUMENT for an id the
    // vocabulary lacks.
    std::string_view token_bytes(int32_t id, bool* is_special = nullptr) const;
    // Whether token_bytes(id) has an answer (a rank, a special or a reserved id).
    bool has_token(int32_t id) const;

    // The highest id + 1 of the ranks and specials, or the model's vocabulary
    // when that is larger.
    int32_t vocab_size() const { return vocab_size_; }
    int32_t bos() const { return bos_; }
    int32_t eos() const { return eos_; }
    // Every id that ends a generation: eos() first, then the others the
    // model's config lists (a list of eos_token_id, generation_config.json).
    const std::vector<int32_t>& eos_ids() const { return eos_ids_; }
    bool is_eos(int32_t id) const { return std::find(eos_ids_.begin(), eos_ids_.end(), id) != eos_ids_.end(); }
    // Adds ids not listed yet (the loaders call it before sharing the tokenizer).
    void add_eos_ids(std::span<const int32_t> ids);
    std::optional<int32_t> special_id(std::string_view text) const;
    const std::vector<SpecialToken>& specials() const { return specials_; }
    // The tiktoken pattern; meaningless for a tokenizer.json's (hf_pipeline() is set).
    PatternKind pattern() const { return pretokenizer_ ? pretokenizer_->kind() : PatternKind::o200k; }
    const HfPipeline* hf_pipeline() const { return hf_.get(); }
    const RankTable& ranks() const { return ranks_; }

    // Plain-mode encoding of valid UTF-8 (no check), for the markup loop and
    // the tests.
    void encode_ordinary(std::string_view text, std::vector<int32_t>& out) const;

private:
    void check_specials();  // ids in range, not ranks, not given twice; sets vocab_size_
    RankTable ranks_;
    std::vector<SpecialToken> specials_;
    std::unordered_map<int32_t, size_t> special_index_;  // id -> index into specials_
    SpecialMatcher matcher_;                      // the specials markup mode cuts at before encoding segments
    std::unique_ptr<const Pretokenizer> pretokenizer_;  // tiktoken's path; null for a tokenizer.json's
    std::shared_ptr<const HfPipeline> hf_;         // a tokenizer.json's path; null for tiktoken's
    int32_t vocab_size_ = 0;
    int32_t bos_ = -1, eos_ = -1;
    std::vector<int32_t> eos_ids_;  // eos_ first, when there is one
    int32_t model_vocab_ = 0;  // ids below it with no bytes are reserved, not refused
};

}  // namespace waste::text
