#include "grammar/token_mask.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "platform/error.h"
#include "text/tokenizer.h"

namespace waste::grammar {

VocabularyTrie::VocabularyTrie(std::vector<std::string> bytes) : bytes_(std::move(bytes)) {
    const std::vector<std::string>& token_bytes = bytes_;
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
    // Grown by doubling: give the slack back, so the trie holds what
    // vocabulary_trie_bound_bytes plans for (grammar_memory.h).
    nodes_.shrink_to_fit();
    token_ids_.shrink_to_fit();
}

size_t VocabularyTrie::memory_bytes() const {
    size_t n = nodes_.capacity() * sizeof(Node) + token_ids_.capacity() * sizeof(int32_t) + bytes_.capacity() * sizeof(std::string);
    for (const std::string& b : bytes_)
        if (b.capacity() > std::string().capacity()) n += b.capacity() + 1;  // a heap block (inline strings have none)
    return n;
}

VocabularyTrie VocabularyTrie::from_tokenizer(const text::Tokenizer& tokenizer) {
    std::vector<std::string> bytes(static_cast<size_t>(tokenizer.vocab_size()));
    for (int32_t id = 0; id < tokenizer.vocab_size(); ++id) {
        if (!tokenizer.has_token(id)) continue;
        bool special = false;
        const std::string_view b = tokenizer.token_bytes(id, &special);
        if (!special) bytes[static_cast<size_t>(id)] = std::string(b);  // a special's text is markup, not output bytes
    }
    return VocabularyTrie(std::move(bytes));
}

TokenMasker::TokenMasker(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const VocabularyTrie> trie,
                         std::shared_ptr<const RunClasses> runs)
    : grammar_(std::move(grammar)),
      trie_(std::move(trie)),
      matcher_(*grammar_),
      state_(matcher_.initial()),
      runs_(runs ? std::move(runs) : std::make_shared<const RunClasses>(*grammar_, *trie_)) {}

void TokenMasker::compute(TokenBits& bits) {
    bits.assign((trie_->vocab() + 63) / 64, 0);
    if (!compute_runs(bits)) walk_trie(bits);
}

void TokenMasker::walk_trie(TokenBits& bits) {
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

int32_t TokenMasker::run_step(int32_t state, const RunClasses::Run& run, bool& closed) {
    closed = false;
    if (!matcher_.at_boundary(state)) return ByteMatcher::dead;
    bool taken = false;
    for (int32_t stack : matcher_.stacks(state)) {
        if (stack == 0) continue;  // the empty stack takes nothing
        switch (run.relations[matcher_.top_class(stack)]) {
            case RunClasses::Relation::partial: return ByteMatcher::dead;  // the next state depends on the character
            case RunClasses::Relation::superset: taken = true; break;
            case RunClasses::Relation::disjoint: break;
        }
    }
    // Every character of the run moves exactly the stacks holding all of it,
    // so one member's step is every member's (the bounds included: the same
    // stacks expand the same way). Where no stack holds any of it, every
    // character of the run and every incomplete one completing in it is
    // refused; but where the step is refused by a bound, an incomplete
    // character still passes, so that is not `closed`.
    closed = !taken;
    return taken ? matcher_.walk(state, run.representative) : ByteMatcher::dead;
}

uint32_t TokenMasker::build_chain(int32_t from, const RunClasses::Run& run, bool& closed) {
    // s0 = from, s1, …: the states after each further character of the run.
    closed = false;
    chain_.assign(1, from);
    for (;;) {
        const int32_t next = run_step(chain_.back(), run, closed);
        if (next == ByteMatcher::dead) break;
        chain_.push_back(next);
        if (chain_.size() > max_run_chars) {
            closed = true;  // no reading has more characters: nothing asks past the chain's end
            break;
        }
    }
    return static_cast<uint32_t>(chain_.size() - 1);
}

bool TokenMasker::compute_continued(TokenBits& bits) {
    const uint8_t r = matcher_.remaining(state_);
    if (r == 0 || r > 3 || runs_->runs().empty()) return false;
    // One run's lists hold every token that may follow, so any run gives the
    // exact mask; the one that the state's stacks read uniformly is the one
    // whose chain will likely exist after the character (else the widest).
    const RunClasses::Run* chosen = &runs_->runs().front();
    for (const RunClasses::Run& candidate : runs_->runs()) {
        bool uniform = true, held = false;
        for (int32_t stack : matcher_.stacks(state_)) {
            if (stack == 0) continue;
            const auto relation = candidate.relations[matcher_.top_class(stack)];
            uniform = uniform && relation != RunClasses::Relation::partial;
            held = held || relation == RunClasses::Relation::superset;
        }
        if (uniform && held) {
            chosen = &candidate;
            break;
        }
    }
    const RunClasses::Run& run = *chosen;
    auto allow = [&](int32_t id) { bits[static_cast<size_t>(id) / 64] |= uint64_t{1} << (id % 64); };
    auto taken = [&](int32_t from, const std::string& bytes, size_t offset) {
        return from != ByteMatcher::dead &&
               matcher_.walk(from, std::string_view(bytes).substr(offset)) != ByteMatcher::dead;
    };
    const auto& list = run.continued[r - 1];
    size_t i = 0;
    for (; i < list.size() && list[i].kind == RunClasses::continued_whole; ++i)
        if (taken(state_, trie_->bytes(list[i].id), 0)) allow(list[i].id);
    int32_t chained = ByteMatcher::dead;  // the state chain_ starts from
    uint32_t reached = 0;
    bool closed = false;
    for (const auto& group : run.continued_groups[r - 1]) {
        const size_t begin = i;
        i = group.end;
        const int32_t after = matcher_.walk(state_, std::string_view(group.head, r));  // the state after the character
        if (after == ByteMatcher::dead) continue;  // the character is refused: the whole group is
        if (after != chained) {
            chained = after;
            reached = build_chain(after, run, closed);
        }
        for (size_t j = begin; j < group.end; ++j) {
            const RunClasses::Continued& e = list[j];
            if (chain_.size() == 1) {
                if (taken(after, trie_->bytes(e.id), r)) allow(e.id);  // not a run state: byte by byte
            } else if (e.chars <= reached) {
                if (e.kind == RunClasses::continued_pure || taken(chain_[e.chars], trie_->bytes(e.id), e.rest)) allow(e.id);
            } else if (!closed && taken(after, trie_->bytes(e.id), r)) {
                allow(e.id);  // longer than the known run, which did not close: byte by byte
            }
        }
    }
    return true;
}

bool TokenMasker::compute_runs(TokenBits& bits) {
    if (!matcher_.at_boundary(state_)) return compute_continued(bits);  // the readings start at a character boundary
    for (const RunClasses::Run& run : runs_->runs()) {
        bool closed = false;
        const uint32_t reached = build_chain(state_, run, closed);  // s_reached is the last known state
        // Not a run state (no step): the trie walk, which is cheap where the
        // run is refused at once — a mask from here would check every mixed token.
        if (chain_.size() == 1) continue;
        // Pure tokens: those of at most `reached` characters are allowed; longer
        // ones are refused where the chain closed, else checked whole.
        const uint64_t* pure = runs_->pure_upto(run, std::min(reached, run.chars));
        std::copy(pure, pure + runs_->words(), bits.begin());
        if (!closed && reached < run.chars) {
            const uint64_t* all = runs_->pure_upto(run, run.chars);
            for (size_t w = 0; w < runs_->words(); ++w) {
                for (uint64_t left = all[w] & ~pure[w]; left; left &= left - 1) {
                    const auto id = static_cast<int32_t>(w * 64 + static_cast<size_t>(std::countr_zero(left)));
                    if (matcher_.walk(state_, trie_->bytes(id)) != ByteMatcher::dead) bits[w] |= uint64_t{1} << (id % 64);
                }
            }
        }
        check_mixed(run, reached, closed, bits);
        return true;
    }
    return false;
}

void TokenMasker::check_mixed(const RunClasses::Run& run, uint32_t reached, bool closed, TokenBits& bits) {
    // A mixed token is allowed when its rest's bytes are taken from s_m.
    // Consecutive rests share `common` bytes, whose states are kept in
    // walk_states_; a rest whose shared part was already refused is refused
    // without a step.
    walk_states_.resize(static_cast<size_t>(trie_->max_depth()) + 1);
    size_t refused_at = std::numeric_limits<size_t>::max();  // where the previous rest died (its byte index)
    uint32_t m_prev = std::numeric_limits<uint32_t>::max();
    size_t known = 0;  // walk_states_[0..known] hold the previous rest's states
    for (const RunClasses::Mixed& e : run.mixed) {
        if (e.prefix_chars > reached) {
            if (closed) break;  // sorted by m: every later one needs the run past its end
            if (matcher_.walk(state_, trie_->bytes(e.id)) != ByteMatcher::dead)
                bits[static_cast<size_t>(e.id) / 64] |= uint64_t{1} << (e.id % 64);
            continue;
        }
        const char* rest = run.rest_bytes.data() + e.rest;
        size_t from = e.common;
        if (e.prefix_chars != m_prev) {
            m_prev = e.prefix_chars;
            walk_states_[0] = chain_[e.prefix_chars];
            refused_at = std::numeric_limits<size_t>::max();
            known = 0;
            from = 0;
        }
        if (refused_at < from) continue;  // the shared prefix is already refused
        from = std::min(from, known);
        int32_t s = walk_states_[from];
        size_t i = from;
        const size_t length = e.length;
        for (; i < length; ++i) {
            s = matcher_.step(s, static_cast<uint8_t>(rest[i]));
            if (s == ByteMatcher::dead) break;
            walk_states_[i + 1] = s;
        }
        known = i;
        if (i < length) {
            refused_at = i;
            continue;
        }
        refused_at = std::numeric_limits<size_t>::max();
        bits[static_cast<size_t>(e.id) / 64] |= uint64_t{1} << (e.id % 64);
    }
}

const TokenBits& TokenMasker::allowed() {
    if (matcher_.memory_bytes() > automaton_rebuild_bytes) {
        state_ = matcher_.rebuilt(state_);
        cache_.clear();
        cache_bytes_ = 0;
    }
    if (auto it = cache_.find(state_); it != cache_.end()) return it->second;
    const size_t entry_bytes = mask_entry_bytes(trie_->vocab());
    if (cache_bytes_ + entry_bytes > mask_cache_bytes(trie_->vocab())) {
        cache_.clear();
        cache_bytes_ = 0;
    }
    TokenBits bits;
    compute(bits);  // may fail (the automaton's bound): nothing is cached then
    cache_bytes_ += entry_bytes;
    return cache_[state_] = std::move(bits);
}

namespace {
// std::popcount is a library call in the baseline-ISA build (no POPCNT).
size_t bit_count(uint64_t w) {
    w = w - ((w >> 1) & 0x5555555555555555u);
    w = (w & 0x3333333333333333u) + ((w >> 2) & 0x3333333333333333u);
    w = (w + (w >> 4)) & 0x0F0F0F0F0F0F0F0Fu;
    return static_cast<size_t>((w * 0x0101010101010101u) >> 56);
}

// [byte][i]: all ones where bit i of byte is set (a token kept), else zero.
constexpr auto keep_lanes = [] {
    std::array<std::array<uint32_t, 8>, 256> t{};
    for (size_t b = 0; b < 256; ++b)
        for (size_t i = 0; i < 8; ++i) t[b][i] = ((b >> i) & 1u) ? ~0u : 0u;
    return t;
}();
}  // namespace

size_t TokenMasker::mask_logits(std::span<float> logits, std::span<const int32_t> end_tokens) {
    constexpr float refused = -std::numeric_limits<float>::infinity();
    constexpr uint32_t refused_bits = std::bit_cast<uint32_t>(refused);
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
        // Word by word, without a branch per token (why: a mask over 163,840
        // tokens is most of a cache hit's time; whole words of allowed or
        // refused tokens are common, and a select vectorises where a branch
        // per token mispredicts).
        for (size_t word = 0; word * 64 < vocab; ++word) {
            const uint64_t w = bits[word];
            const size_t first = word * 64, last = std::min(vocab, first + 64);
            float* l = logits.data() + first;
            if (last - first == 64) {
                if (w == ~uint64_t{0}) {
                    kept += 64;
                    continue;
                }
                if (w == 0) {
                    std::fill(l, l + 64, refused);
                    continue;
                }
                kept += bit_count(w);
                // Eight tokens at a time through a table of lane masks: the
                // build's baseline ISA has no variable vector shift.
                for (size_t byte = 0; byte < 8; ++byte) {
                    const auto& keep = keep_lanes[(w >> (8 * byte)) & 0xFFu];
                    float* p = l + 8 * byte;
                    for (size_t i = 0; i < 8; ++i) {
                        uint32_t v;
                        std::memcpy(&v, p + i, sizeof v);
                        v = (v & keep[i]) | (refused_bits & ~keep[i]);
                        std::memcpy(p + i, &v, sizeof v);
                    }
                }
                continue;
            }
            for (size_t t = first; t < last; ++t) {
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
