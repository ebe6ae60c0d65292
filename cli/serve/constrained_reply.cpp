#include "constrained_reply.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace waste_serve {

namespace {

std::vector<int32_t> markup_tokens(const waste_tokenizer* tokenizer, const std::string& text) {
    int32_t* ids = nullptr;
    size_t count = 0;
    waste_error error{};
    if (waste_tokenizer_tokenize(tokenizer, text.data(), text.size(), WASTE_TOKENIZE_MARKUP, &ids, &count, &error) != WASTE_OK)
        throw std::runtime_error(std::string("cannot tokenize '") + text + "': " + error.message);
    std::vector<int32_t> out(ids, ids + count);
    waste_tokens_free(ids);
    return out;
}

int32_t marker(const waste_tokenizer* tokenizer, const char* text) {
    const auto ids = markup_tokens(tokenizer, text);
    // The renderer answered "xtml", so each marker is one special id (§1).
    if (ids.size() != 1) throw std::runtime_error(std::string("the XTML marker ") + text + " is not one token");
    return ids[0];
}

}  // namespace

ConstrainedReply::ConstrainedReply(SharedGrammar grammar, const waste_tokenizer* tokenizer, const std::string& format,
                                   const std::string& channel, std::vector<int32_t> end_ids)
    : grammar_(std::move(grammar)), end_ids_(std::move(end_ids)) {
    if (format == "xtml") {
        open_ = marker(tokenizer, "<|open|>");
        close_ = marker(tokenizer, "<|close|>");
        end_ids_.push_back(close_);  // closing `response` ends the answer
        if (channel == "think") {
            phase_ = Phase::think;
            think_to_answer_ = markup_tokens(tokenizer, "think<|sep|><|open|>response<|sep|>");
        }
    }
    waste_error error{};
    if (waste_grammar_state_create(grammar_.get(), end_ids_.data(), end_ids_.size(), &state_, &error) != WASTE_OK)
        throw std::runtime_error(error.message);
}

ConstrainedReply::~ConstrainedReply() { waste_grammar_state_free(state_); }

bool ConstrainedReply::is_end(int32_t token) const {
    return std::find(end_ids_.begin(), end_ids_.end(), token) != end_ids_.end();
}

ConstrainedReply::Next ConstrainedReply::next(float* logits, size_t vocab) {
    if (!forcing_.empty()) return {Action::force, forcing_.front()};
    if (phase_ == Phase::think) {
        // Free text, but no element opened and no end before the answer;
        // <|close|> stays: it is how the model leaves think.
        for (const int32_t id : end_ids_)
            if (id != close_ && static_cast<size_t>(id) < vocab) logits[id] = -INFINITY;
        if (static_cast<size_t>(open_) < vocab) logits[open_] = -INFINITY;
        return {};
    }
    if (waste_grammar_state_must_end(state_)) return {Action::end};
    size_t allowed = 0;
    waste_error error{};
    if (waste_grammar_state_mask(state_, logits, vocab, &allowed, &error) != WASTE_OK) throw std::runtime_error(error.message);
    if (allowed == 0) return {Action::end};  // complete, and no end token in the vocabulary
    return {};
}

bool ConstrainedReply::accept(int32_t token) {
    if (!forcing_.empty()) {
        forcing_.pop_front();
        if (forcing_.empty()) phase_ = Phase::answer;
        return false;
    }
    if (phase_ == Phase::think) {
        if (token == close_) forcing_.assign(think_to_answer_.begin(), think_to_answer_.end());
        return false;
    }
    if (is_end(token)) return true;
    waste_error error{};
    if (waste_grammar_state_accept(state_, token, &error) != WASTE_OK) throw std::runtime_error(error.message);
    return false;
}

}  // namespace waste_serve
