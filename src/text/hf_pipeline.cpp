// hf_pipeline.cpp — normalise, split, merge (hf_pipeline.h).
#include "text/hf_pipeline.h"

#include "text/nfc_normalizer.h"

namespace waste::text {

struct HfPipeline::Scratch {
    std::vector<std::unique_ptr<Pretokenizer::Cursor>> cursors;  // [split level]
    MergeScratch merge;
};

HfPipeline::HfPipeline(bool nfc, const std::vector<Split>& splits, MergeTable merges, bool ignore_merges,
                       std::vector<SpecialToken> normalized_added_tokens)
    : nfc_(nfc),
      merges_(std::move(merges)),
      ignore_merges_(ignore_merges),
      normalized_added_tokens_(std::move(normalized_added_tokens)),
      normalized_matcher_(normalized_added_tokens_) {
    for (const Split& split : splits) splits_.push_back(std::make_unique<Pretokenizer>(split.pcre2_source, split.label));
    for (const auto& token : normalized_added_tokens_) normalized_ids_.insert(token.id);
}

void HfPipeline::split_and_merge(size_t level, std::string_view text, const RankTable& vocab, Scratch& scratch,
                                 std::vector<int32_t>& out) const {
    if (level == splits_.size()) {
        merge_pair_encode(text, vocab, merges_, ignore_merges_, scratch.merge, out);
        return;
    }
    // Each level's cursor serves one text at a time: the levels below finish
    // before this one moves on.
    Pretokenizer::Cursor& cursor = *scratch.cursors[level];
    cursor.reset(text);
    size_t done = 0;
    std::string_view piece;
    while (cursor.next(piece)) {
        const auto begin = static_cast<size_t>(piece.data() - text.data());
        if (begin > done) split_and_merge(level + 1, text.substr(done, begin - done), vocab, scratch, out);
        split_and_merge(level + 1, piece, vocab, scratch, out);
        done = begin + piece.size();
    }
    if (done < text.size()) split_and_merge(level + 1, text.substr(done), vocab, scratch, out);
}

void HfPipeline::encode(std::string_view text, bool markup, const RankTable& vocab, std::vector<int32_t>& out) const {
    if (text.empty()) return;
    std::string normalized;
    if (nfc_ && !is_nfc(text)) {
        normalized = to_nfc(text);
        text = normalized;
    }
    Scratch scratch;
    for (size_t i = 0; i < splits_.size(); ++i)
        scratch.cursors.push_back(std::make_unique<Pretokenizer::Cursor>(*splits_[i], std::string_view()));
    const auto encode_piece = [&](std::string_view piece) {
        if (!piece.empty()) split_and_merge(0, piece, vocab, scratch, out);
    };
    if (!markup || normalized_added_tokens_.empty()) {
        encode_piece(text);
        return;
    }
    normalized_matcher_.split(text, encode_piece, [&](int32_t id) { out.push_back(id); });
}

}  // namespace waste::text
