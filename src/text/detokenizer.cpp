// detokenizer.cpp — the streaming detokenizer (detokenizer.h).
#include "text/detokenizer.h"

#include "platform/error.h"
#include "text/utf8.h"

namespace waste::text {

StreamDetokenizer::StreamDetokenizer(std::shared_ptr<const Tokenizer> tokenizer, bool markup)
    : tokenizer_(std::move(tokenizer)), markup_(markup) {
    WASTE_CHECK(tokenizer_ != nullptr);
}

std::string_view StreamDetokenizer::push(int32_t id) {
    bool special = false;
    const std::string_view bytes = tokenizer_->token_bytes(id, &special);
    ready_.assign(held_);
    if (!special || markup_) ready_.append(bytes);
    const size_t tail = incomplete_utf8_tail(ready_);
    held_.assign(ready_, ready_.size() - tail, tail);
    ready_.resize(ready_.size() - tail);
    return ready_;
}

std::string_view StreamDetokenizer::finish() {
    ready_.swap(held_);
    held_.clear();
    return ready_;
}

}  // namespace waste::text
