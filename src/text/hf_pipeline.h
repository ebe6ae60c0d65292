// hf_pipeline.h — what a Hugging Face tokenizer.json does to a plain
// segment of text: its normaliser (NFC or none), the added tokens that match
// on normalised text (markup mode only), its Split pre-tokenizers one after
// the other (each cuts every piece of the one before into its regex matches
// and the gaps between them: the "Isolated" behaviour), the ByteLevel
// alphabet (a bijection, so the work is done on raw bytes), and its BPE
// model's merge-priority rule (merge_bpe.h).
//
// The regexes are the file's, rewritten from the Oniguruma dialect
// Hugging Face compiles into PCRE2 (hf_regex.h).
//
// Deliberately not here: reading tokenizer.json and refusing what it cannot
// do (hf_tokenizer_json.h), the added tokens matched on raw text and decoding
// (tokenizer.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "text/merge_bpe.h"
#include "text/pretokenizer.h"
#include "text/rank_table.h"
#include "text/specials.h"

namespace waste::text {

class HfPipeline {
public:
    struct Split {
        std::string pcre2_source;
        std::string label;  // names it in errors: "tokenizer.json pre_tokenizer.pretokenizers[0]"
    };

    HfPipeline(bool nfc, const std::vector<Split>& splits, MergeTable merges, bool ignore_merges,
               std::vector<SpecialToken> normalized_added_tokens);

    // Appends the ids of one segment (valid UTF-8, no raw-text added token
    // in it) to out. markup: cut at the added tokens matched on normalised
    // text first.
    void encode(std::string_view text, bool markup, const RankTable& vocab, std::vector<int32_t>& out) const;

    // Whether the added token with this id is matched on normalised text.
    bool matches_normalized(int32_t id) const { return normalized_ids_.count(id) > 0; }
    bool nfc() const { return nfc_; }
    size_t split_count() const { return splits_.size(); }
    const MergeTable& merges() const { return merges_; }

private:
    struct Scratch;
    void split_and_merge(size_t level, std::string_view text, const RankTable& vocab, Scratch& scratch,
                         std::vector<int32_t>& out) const;

    bool nfc_;
    std::vector<std::unique_ptr<Pretokenizer>> splits_;
    MergeTable merges_;
    bool ignore_merges_;
    std::vector<SpecialToken> normalized_added_tokens_;
    SpecialMatcher normalized_matcher_;
    std::unordered_set<int32_t> normalized_ids_;
};

}  // namespace waste::text
