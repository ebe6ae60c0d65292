#include "constrained_reply.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace waste_serve {

namespace {

std::vector<int32_t> tokenize(const waste_tokenizer* tokenizer, const std::string& text, uint32_t flags) {
    int32_t* ids = nullptr;
    size_t count = 0;
    waste_error error{};
    if (waste_tokenizer_tokenize(tokenizer, text.data(), text.size(), flags, &ids, &count, &error) != WASTE_OK)
        throw std::runtime_error("cannot tokenize '" + text + "': " + error.message);
    std::vector<int32_t> out(ids, ids + count);
    waste_tokens_free(ids);
    return out;
}

}  // namespace

Markup::Markup(const waste_tokenizer* t, bool is_xtml) : tokenizer(t), xtml(is_xtml) {
    if (!xtml) return;
    const auto one = [this](const char* text) {
        const auto ids = tokenize(tokenizer, text, WASTE_TOKENIZE_MARKUP);
        // The renderer answered "xtml", so each marker is one special id (§1).
        if (ids.size() != 1) throw std::runtime_error(std::string("the XTML marker ") + text + " is not one token");
        return ids[0];
    };
    open = one("<|open|>");
    close = one("<|close|>");
    sep = one("<|sep|>");
    end_of_msg = one("<|end_of_msg|>");
    think_exit = close;
    think_masked = {open, end_of_msg};
}

int32_t Markup::special(const std::string& marker) const {
    const auto ids = tokenize(tokenizer, marker, WASTE_TOKENIZE_MARKUP);
    return ids.size() == 1 ? ids[0] : -1;
}

std::vector<int32_t> Markup::plain(const std::string& text) const { return tokenize(tokenizer, text, 0); }

std::vector<int32_t> Markup::tag(int32_t marker, const std::string& header) const {
    std::vector<int32_t> out{marker};
    const auto text = plain(header);
    out.insert(out.end(), text.begin(), text.end());
    out.push_back(sep);
    return out;
}

std::string Markup::text(const std::vector<int32_t>& ids) const {
    char* bytes = nullptr;
    size_t length = 0;
    waste_error error{};
    if (waste_tokenizer_detokenize(tokenizer, ids.data(), ids.size(), 0, &bytes, &length, &error) != WASTE_OK)
        throw std::runtime_error(error.message);
    std::string out(bytes, length);
    waste_string_free(bytes);
    return out;
}

ConstrainedReply::~ConstrainedReply() { waste_grammar_state_free(state_); }

void ConstrainedReply::begin_stage() {
    forced_ = 0;
    taken_.clear();
    waste_grammar_state_free(state_);
    state_ = nullptr;
    if (stages_.empty() || stages_.front().kind != Stage::Kind::grammar) return;
    const Stage& stage = stages_.front();
    waste_error error{};
    if (waste_grammar_state_create(stage.grammar.get(), stage.ends.data(), stage.ends.size(), &state_, &error) != WASTE_OK)
        throw std::runtime_error(error.message);
}

void ConstrainedReply::finish_stage() {
    Stage done = std::move(stages_.front());
    stages_.pop_front();
    const std::vector<int32_t> taken = std::move(taken_);
    if (done.on_done) done.on_done(*this, taken);
    begin_stage();
}

ConstrainedReply::Next ConstrainedReply::next(float* logits, size_t vocab) {
    if (stages_.empty()) return {Action::end};
    if (!begun_) {
        begun_ = true;
        begin_stage();
    }
    Stage& stage = stages_.front();
    const auto mask = [&](int32_t id) {
        if (id >= 0 && static_cast<size_t>(id) < vocab) logits[id] = -INFINITY;
    };
    switch (stage.kind) {
        case Stage::Kind::force:
            return {Action::force, stage.tokens.at(forced_)};
        case Stage::Kind::think:
            for (const int32_t id : think_ends_) mask(id);
            for (const int32_t id : markup_->think_masked) mask(id);
            return {};
        case Stage::Kind::grammar: {
            if (waste_grammar_state_must_end(state_)) {
                if (stage.final) return {Action::end};
                if (stage.ends.empty()) {  // complete by itself: the next stage
                    finish_stage();
                    return next(logits, vocab);
                }
                return {Action::force, stage.ends.at(0)};
            }
            size_t allowed = 0;
            waste_error error{};
            if (waste_grammar_state_mask(state_, logits, vocab, &allowed, &error) != WASTE_OK)
                throw std::runtime_error(error.message);
            for (const int32_t id : markup_->structure)
                if (std::find(stage.ends.begin(), stage.ends.end(), id) == stage.ends.end()) mask(id);
            if (allowed == 0) {  // complete, and no end token in the vocabulary
                if (stage.final) return {Action::end};
                if (stage.ends.empty()) {
                    finish_stage();
                    return next(logits, vocab);
                }
                return {Action::force, stage.ends.at(0)};
            }
            return {};
        }
    }
    return {};
}

bool ConstrainedReply::accept(int32_t token) {
    if (stages_.empty()) return true;
    Stage& stage = stages_.front();
    taken_.push_back(token);
    switch (stage.kind) {
        case Stage::Kind::force:
            if (++forced_ == stage.tokens.size()) finish_stage();
            return false;
        case Stage::Kind::think:
            if (token == markup_->think_exit) finish_stage();
            return false;
        case Stage::Kind::grammar: {
            if (std::find(stage.ends.begin(), stage.ends.end(), token) != stage.ends.end()) {
                const bool ends_reply = stage.final;
                finish_stage();
                return ends_reply;
            }
            waste_error error{};
            if (waste_grammar_state_accept(state_, token, &error) != WASTE_OK) throw std::runtime_error(error.message);
            return false;
        }
    }
    return false;
}

std::unique_ptr<ConstrainedReply> constrain_answer(SharedGrammar grammar, const waste_tokenizer* tokenizer,
                                                   const std::string& format, const std::string& channel,
                                                   std::vector<int32_t> end_ids) {
    auto markup = std::make_shared<const Markup>(tokenizer, format == "xtml");
    auto reply = std::make_unique<ConstrainedReply>(markup, end_ids);
    if (markup->xtml) {
        end_ids.push_back(markup->close);  // closing `response` ends the answer
        if (channel == "think") {
            reply->add(Stage::think());
            // The model wrote <|close|>: the rest of </think>, then <response>.
            std::vector<int32_t> to_answer = markup->plain("think");
            to_answer.push_back(markup->sep);
            const auto response = markup->tag(markup->open, "response");
            to_answer.insert(to_answer.end(), response.begin(), response.end());
            reply->add(Stage::force(std::move(to_answer)));
        }
    }
    reply->add(Stage::held(std::move(grammar), std::move(end_ids), true));
    return reply;
}

}  // namespace waste_serve
