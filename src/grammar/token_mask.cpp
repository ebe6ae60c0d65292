#include "grammar/token_mask.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "platform/error.h"
#include "text/tokenizer.h"

namespace waste::grammar {

VocabularyTrie::VocabularyTrie(const std::vector<std::string>& token_bytes) : bytes_(token_bytes) {
    if (token_bytes.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
        fail(WASTE_ERR_INVALID_ARGUMENT, "grammar: a vocabulary of {} tokens", token_bytes.size());
    vocab_ = static_cast<uint32_t>(token_bytes.size());
    std::vector<int32_t> order;
    for (size_t id = 0; id < token_bytes.size(); ++id) {
        if (token_bytes[id].size() > std::numeric_limits<uint16_t>::max())
            fail(WASTE_ERR_INVALID_ARGUMENT, "grammar: token {} has {} bytes (at most 65,535)", id, token_bytes[id].size());
        if (!token_bytes[id].empty()) order.push_back(static_cast<int32_t>(id));
    }
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
        return token_bytes[static_cast<size_t>(a)] < token_bytes[static_cast<size_t>(b)] || (token_bytes[static_cast<size_t>(a)] == token_bytes[static_cast<size_t>(b)] && a < b);
    });
    nodes_.push_back(Node{0, 0, 0, 0, 0});  // the root
    std::vector<uint32_t> open{0};          // the path to the last token's node
    const std::string* previous = nullptr;
    for (int32_t id : order) {
        const std::string& bytes = token_bytes[static_cast<size_t>(id)];
        size_t common = 0;
        if (previous)
            while (common < previous->size() && common < bytes.size() && (*previous)[common] == bytes[common]) ++common;
        while (open.size() - 1 > common) {
            nodes_[open.back()].end = static_cast<uint32_t>(nodes_.size());
            open.pop_back();
        }
        for (size_t d = common; d < bytes.size(); ++d) {
            const auto index = static_cast<uint32_t>(nodes_.size());
            nodes_.push_back(Node{0, 0, 0, static_cast<uint16_t>(d + 1), static_cast<uint8_t>(bytes[d])});
            open.push_back(index);
        }
        Node& n = nodes_[open.back()];
        if (n.token_begin == n.token_end) n.token_begin = n.token_end = static_cast<uint32_t>(token_ids_.size());
        token_ids_.push_back(id);
        ++n.token_end;
        max_depth_ = std::max(max_depth_, static_cast<uint16_t>(bytes.size()));
        previous = &bytes;
    }
    while (!open.empty()) {
        nodes_[open.back()].end = static_cast<uint32_t>(nodes_.size());
        open.pop_back();
    }
}

VocabularyTrie VocabularyTrie::from_tokenizer(const text::Tokenizer& tokenizer) {
    std::vector<std::string> bytes(static_cast<size_t>(tokenizer.vocab_size()));
    for (int32_t id = 0; id < tokenizer.vocab_size(); ++id) {
        if (!tokenizer.has_token(id)) continue;
        bool special = false;
        const std::string_view b = tokenizer.token_bytes(id, &special);
        if (!special) bytes[static_cast<size_t>(id)] = std::string(b);  // a special's text is markup, not output bytes
    }
    return VocabularyTrie(bytes);
}

TokenMasker::TokenMasker(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const VocabularyTrie> trie)
    : grammar_(std::move(grammar)), trie_(std::move(trie)), matcher_(*grammar_), state_(matcher_.initial()) {}

void TokenMasker::compute(TokenBits& bits) {
    bits.assign((trie_->vocab() + 63) / 64, 0);
    const auto& nodes = trie_->nodes();
    const auto& ids = trie_->token_ids();
    walk_states_.resize(static_cast<size_t>(trie_->max_depth()) + 1);
    walk_states_[0] = state_;
    for (size_t i = 1; i < nodes.size();) {
        const VocabularyTrie::Node& n = nodes[i];
        const int32_t s = matcher_.step(walk_states_[n.depth - 1u], n.byte);
        if (s == ByteMatcher::dead) {
            i = n.end;  // no token under this prefix can continue the grammar
            continue;
        }
        walk_states_[n.depth] = s;
        for (uint32_t t = n.token_begin; t < n.token_end; ++t) {
            const auto id = static_cast<uint32_t>(ids[t]);
            bits[id / 64] |= uint64_t{1} << (id % 64);
        }
        ++i;
    }
}

const TokenBits& TokenMasker::allowed() {
    if (matcher_.memory_bytes() > max_matcher_bytes) {
        state_ = matcher_.rebuilt(state_);
        cache_.clear();
        cache_bytes_ = 0;
    }
    if (auto it = cache_.find(state_); it != cache_.end()) return it->second;
    if (cache_bytes_ > max_mask_cache_bytes) {
        cache_.clear();
        cache_bytes_ = 0;
    }
    TokenBits& bits = cache_[state_];
    compute(bits);
    cache_bytes_ += bits.size() * sizeof(uint64_t) + 64;
    return bits;
}

size_t TokenMasker::mask_logits(std::span<float> logits, std::span<const int32_t> end_tokens) {
    constexpr float refused = -std::numeric_limits<float>::infinity();
    // The end tokens' logits, restored below where the grammar may end.
    std::vector<std::pair<int32_t, float>> ends;
    for (int32_t t : end_tokens)
        if (t >= 0 && static_cast<size_t>(t) < logits.size()) ends.emplace_back(t, logits[static_cast<size_t>(t)]);
    std::sort(ends.begin(), ends.end());
    ends.erase(std::unique(ends.begin(), ends.end(), [](auto a, auto b) { return a.first == b.first; }), ends.end());
    size_t kept = 0;
    if (ended_) {
        std::fill(logits.begin(), logits.end(), refused);
    } else {
        const TokenBits& bits = allowed();
        const size_t vocab = std::min<size_t>(logits.size(), trie_->vocab());
        for (size_t word = 0; word * 64 < vocab; ++word) {
            const uint64_t w = bits[word];
            const size_t last = std::min(vocab, word * 64 + 64);
            if (w == ~uint64_t{0} && last - word * 64 == 64) {
                kept += 64;
                continue;
            }
            for (size_t t = word * 64; t < last; ++t) {
                if ((w >> (t % 64)) & 1u)
                    ++kept;
                else
                    logits[t] = refused;
            }
        }
        std::fill(logits.begin() + static_cast<std::ptrdiff_t>(vocab), logits.end(), refused);
    }
    const bool end_allowed = can_end() && !ended_;
    for (auto [t, logit] : ends) {
        const bool was_kept = logits[static_cast<size_t>(t)] != refused;
        if (end_allowed && logit != refused) {
            if (!was_kept) ++kept;
            logits[static_cast<size_t>(t)] = logit;
        } else if (was_kept) {
            --kept;
            logits[static_cast<size_t>(t)] = refused;
        }
    }
    return kept;
}

bool TokenMasker::accept(int32_t token, std::span<const int32_t> end_tokens) {
    if (ended_) return false;
    if (std::find(end_tokens.begin(), end_tokens.end(), token) != end_tokens.end()) {
        if (!can_end()) return false;
        ended_ = true;
        return true;
    }
    if (token < 0 || static_cast<uint32_t>(token) >= trie_->vocab()) return false;
    const std::string& bytes = trie_->bytes(token);
    if (bytes.empty()) return false;
    const int32_t next = matcher_.walk(state_, bytes);
    if (next == ByteMatcher::dead) return false;
    state_ = next;
    return true;
}

}  // namespace waste::grammar
