// tokenizer.cpp — text <-> ids over the rank table, pre-tokenizer and
// specials (tokenizer.h).
#include "text/tokenizer.h"

#include <algorithm>

#include "platform/error.h"
#include "text/bpe.h"
#include "text/utf8.h"

namespace waste::text {
namespace {

// The specials markup mode cuts at on raw text: all of tiktoken's; of a
// tokenizer.json's, those not matched on normalised text.
std::vector<SpecialToken> raw_text_specials(const std::vector<SpecialToken>& specials, const HfPipeline* pipeline) {
    if (!pipeline) return specials;
    std::vector<SpecialToken> raw;
    for (const auto& special : specials)
        if (!pipeline->matches_normalized(special.id)) raw.push_back(special);
    return raw;
}

}  // namespace

Tokenizer::Tokenizer(RankTable ranks, std::vector<SpecialToken> specials, PatternKind pattern, int32_t bos,
                     int32_t eos, int32_t model_vocab)
    : ranks_(std::move(ranks)),
      specials_(std::move(specials)),
      matcher_(specials_),
      pretokenizer_(std::make_unique<const Pretokenizer>(pattern)),
      bos_(bos),
      eos_(eos),
      model_vocab_(std::max(model_vocab, 0)) {
    check_specials();
}

Tokenizer::Tokenizer(RankTable vocab, std::vector<SpecialToken> added_tokens,
                     std::shared_ptr<const HfPipeline> pipeline, int32_t bos, int32_t eos, int32_t model_vocab)
    : ranks_(std::move(vocab)),
      specials_(std::move(added_tokens)),
      matcher_(raw_text_specials(specials_, pipeline.get())),
      hf_(std::move(pipeline)),
      bos_(bos),
      eos_(eos),
      model_vocab_(std::max(model_vocab, 0)) {
    WASTE_CHECK(hf_ != nullptr);
    check_specials();
}

void Tokenizer::add_eos_ids(std::span<const int32_t> ids) {
    for (int32_t id : ids)
        if (id >= 0 && !is_eos(id)) eos_ids_.push_back(id);
}

void Tokenizer::check_specials() {
    if (eos_ >= 0) eos_ids_ = {eos_};
    vocab_size_ = std::max(static_cast<int32_t>(ranks_.size()), model_vocab_);
    for (size_t i = 0; i < specials_.size(); ++i) {
        const SpecialToken& special = specials_[i];
        if (special.id < 0 || special.id > max_token_id)
            fail(WASTE_ERR_INVALID_ARGUMENT, "special \"{}\": id {} is out of range [0, {}]",
                 escape_bytes(special.text), special.id, max_token_id);
        if (!ranks_.bytes(static_cast<uint32_t>(special.id)).empty())
            fail_format("special \"{}\": id {} is also the rank of token \"{}\"", escape_bytes(special.text),
                        special.id, escape_bytes(ranks_.bytes(static_cast<uint32_t>(special.id))));
        if (!special_index_.emplace(special.id, i).second)
            fail_format("special \"{}\": id {} is given twice", escape_bytes(special.text), special.id);
        vocab_size_ = std::max(vocab_size_, special.id + 1);
    }
}

void Tokenizer::encode_ordinary(std::string_view text, std::vector<int32_t>& out) const {
    if (hf_) {
        hf_->encode(text, false, ranks_, out);
        return;
    }
    BpeScratch scratch;
    Pretokenizer::Cursor cursor(*pretokenizer_, text);
    std::string_view piece;
    while (cursor.next(piece)) byte_pair_encode(piece, ranks_, scratch, out);
}

void Tokenizer::encode(std::string_view text, bool markup, std::vector<int32_t>& out) const {
    if (const size_t bad = find_invalid_utf8(text); bad != utf8_valid)
        fail(WASTE_ERR_INVALID_ARGUMENT, "text: invalid UTF-8 at byte {} (0x{:02x})", bad,
             static_cast<uint8_t>(text[bad]));
    if (!markup || specials_.empty()) {
        encode_ordinary(text, out);
        return;
    }
    const auto encode_segment = [&](std::string_view segment) {
        if (hf_) hf_->encode(segment, true, ranks_, out);
        else encode_ordinary(segment, out);
    };
    matcher_.split(text, encode_segment, [&](int32_t id) { out.push_back(id); });
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool markup) const {
    std::vector<int32_t> ids;
    encode(text, markup, ids);
    return ids;
}

std::string_view Tokenizer::token_bytes(int32_t id, bool* is_special) const {
    if (id >= 0) {
        const std::string_view bytes = ranks_.bytes(static_cast<uint32_t>(id));
        if (!bytes.empty()) {
            if (is_special) *is_special = false;
            return bytes;
        }
        if (auto it = special_index_.find(id); it != special_index_.end()) {
            if (is_special) *is_special = true;
            return specials_[it->second].text;
        }
        if (id < model_vocab_) {  // reserved: the model may generate it
            if (is_special) *is_special = false;
            return {};
        }
    }
    if (model_vocab_ > 0)
        fail(WASTE_ERR_INVALID_ARGUMENT,
             "token {} is not in the vocabulary (the model's {} ids: {} ranks, {} specials, the rest reserved)", id,
             model_vocab_, ranks_.count(), specials_.size());
    fail(WASTE_ERR_INVALID_ARGUMENT, "token {} is not in the vocabulary ({} ranks, {} specials)", id, ranks_.count(),
         specials_.size());
}

bool Tokenizer::has_token(int32_t id) const {
    if (id < 0) return false;
    return id < model_vocab_ || !ranks_.bytes(static_cast<uint32_t>(id)).empty() || special_index_.count(id) > 0;
}

void Tokenizer::decode(std::span<const int32_t> ids, bool markup, std::string& out) const {
    for (const int32_t id : ids) {
        bool special = false;
        const std::string_view bytes = token_bytes(id, &special);
        if (!special || markup) out.append(bytes);
    }
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool markup) const {
    std::string text;
    decode(ids, markup, text);
    return text;
}

std::optional<int32_t> Tokenizer::special_id(std::string_view text) const {
    for (const auto& special : specials_)
        if (special.text == text) return special.id;
    return std::nullopt;
}

}  // namespace waste::text
