// token_mask.h — which tokens of a vocabulary may come next under a grammar.
//
// VocabularyTrie: every token's bytes in one byte trie, laid out flat in
// depth-first order with each node's subtree end, so the walk is a forward
// scan that skips a whole subtree when the grammar refuses its prefix.
// Tokens without bytes (specials, reserved ids) are kept apart: the grammar
// never allows them, except the end tokens the caller names (EOS, stop
// tokens), which are allowed exactly where the grammar may end. Immutable;
// built once per grammar compile and shared by its generations.
//
// TokenMasker: one generation's grammar state. allowed() computes a state's
// bit set once and memoises it by automaton state, so a state seen again
// (a separator, the inside of an unbounded string) costs a copy of the bits;
// the cache and the automaton are bounded and reset when full. A state
// inside one of the grammar's wide classes (a string) takes its bits from
// the run classes (run_classes.h): a precomputed set plus a check of the
// tokens that leave the class. Any other state walks the trie with the
// ByteMatcher (each trie node one table lookup once the automaton has seen
// the state). A token may span several grammar elements and split a UTF-8
// character — both paths step bytes through the same matcher, so both hold
// by construction.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "grammar/byte_matcher.h"
#include "grammar/grammar_memory.h"
#include "grammar/run_classes.h"

namespace waste::text {
class Tokenizer;
}

namespace waste::grammar {

class VocabularyTrie {
public:
    // token_bytes[id]: the bytes of every id of the vocabulary ("" = no bytes).
    explicit VocabularyTrie(std::vector<std::string> token_bytes);
    static VocabularyTrie from_tokenizer(const text::Tokenizer& tokenizer);

    struct Node {
        uint32_t end;           // one past the last node of this node's subtree
        uint32_t token_begin;   // tokens whose bytes end here: token_ids[token_begin, token_end)
        uint32_t token_end;
        uint16_t depth;         // bytes from the root (the root is 0)
        uint8_t byte;
    };
    const std::vector<Node>& nodes() const { return nodes_; }
    const std::vector<int32_t>& token_ids() const { return token_ids_; }
    uint32_t vocab() const { return vocab_; }
    uint16_t max_depth() const { return max_depth_; }
    const std::string& bytes(int32_t id) const { return bytes_[static_cast<size_t>(id)]; }
    // What it holds (capacity), within vocabulary_trie_bound_bytes (grammar_memory.h).
    size_t memory_bytes() const;

private:
    std::vector<Node> nodes_;
    std::vector<int32_t> token_ids_;
    std::vector<std::string> bytes_;
    uint32_t vocab_ = 0;
    uint16_t max_depth_ = 0;
};

// A bit per token id.
using TokenBits = std::vector<uint64_t>;

class TokenMasker {
public:
    // `runs`: the vocabulary's run classes for this grammar (run_classes.h),
    // built once per compile and shared; built here when null.
    TokenMasker(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const VocabularyTrie> trie,
                std::shared_ptr<const RunClasses> runs = nullptr);

    // The tokens with bytes that may come next (end tokens not included).
    const TokenBits& allowed();
    // Sets every logit the grammar refuses to -infinity; end_tokens keep
    // theirs only where the grammar may end. Returns how many remain.
    size_t mask_logits(std::span<float> logits, std::span<const int32_t> end_tokens);
    // Advances by one token; false (state unchanged) when the grammar refuses it.
    bool accept(int32_t token, std::span<const int32_t> end_tokens);
    bool can_end() const { return ended_ || matcher_.can_end(state_); }
    bool must_end() const { return ended_ || matcher_.must_end(state_); }
    bool ended() const { return ended_; }  // an end token was accepted
    // The automaton's and the mask cache's memory, for the tests and bounds.
    size_t memory_bytes() const { return matcher_.memory_bytes() + cache_bytes_; }

private:
    void compute(TokenBits& bits);
    // The mask from a run class's sets where the state reads that class
    // uniformly (run_classes.h); false (bits untouched) where none does.
    bool compute_runs(TokenBits& bits);
    // Adds the run's mixed tokens taken from the chain in chain_ (its states
    // up to s_reached; `closed`: every character of the run is refused at
    // s_reached).
    void check_mixed(const RunClasses::Run& run, uint32_t reached, bool closed, TokenBits& bits);
    // The state after any one character of the run, or dead; `closed` says
    // whether every character of the run is refused there (no stack holds
    // any of it) rather than the next state depending on the character.
    int32_t run_step(int32_t state, const RunClasses::Run& run, bool& closed);
    // Fills chain_ with the run's states from `from` (s0 = from); returns
    // the last one's index, `reached`, with run_step's `closed` there.
    uint32_t build_chain(int32_t from, const RunClasses::Run& run, bool& closed);
    // compute_runs for a state inside a character (run_classes.h, Continued).
    bool compute_continued(TokenBits& bits);
    void walk_trie(TokenBits& bits);

    std::shared_ptr<const Grammar> grammar_;
    std::shared_ptr<const VocabularyTrie> trie_;
    ByteMatcher matcher_;
    int32_t state_;
    bool ended_ = false;
    std::unordered_map<int32_t, TokenBits> cache_;  // automaton state -> allowed tokens
    size_t cache_bytes_ = 0;
    std::vector<int32_t> walk_states_;  // [depth] scratch for the trie walk
    std::shared_ptr<const RunClasses> runs_;
    std::vector<int32_t> chain_;  // scratch: the states after 0, 1, 2, … characters of a run
};

// One generation's memory is bounded by grammar_memory.h: the automaton is
// rebuilt past automaton_rebuild_bytes and the mask cache cleared past
// mask_cache_bytes(vocab), both between masks.

}  // namespace waste::grammar
