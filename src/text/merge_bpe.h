// merge_bpe.h — byte-pair encoding by merge priority, as Hugging Face's BPE
// model does it: start from the piece's single bytes (each a vocabulary
// token) and repeatedly apply, among the adjacent pairs that are a listed
// merge, the one listed first (the leftmost on a tie), replacing the pair by
// the merge's result token, until no adjacent pair is a listed merge. With
// ignore_merges, a piece that is itself a token is that token.
//
// This differs from tiktoken's rule (bpe.h: merge the pair whose joined
// bytes have the lowest rank): here only listed pairs merge, and a merge's
// priority is its place in the merges list, not its result's id. The two
// agree only for vocabularies built to make them agree, which a
// tokenizer.json does not promise, so the rule is implemented as it is.
//
// One implementation, a min-heap over a linked list (O(n log n), for a run
// of 100,000 spaces as for a word); a heap entry remembers the pair it was
// made for, so one that a neighbouring merge has changed is dropped — the
// order is exactly "the lowest (priority, position) among the current
// pairs".
//
// Deliberately not here: the vocabulary (rank_table.h) and reading merges
// from a file (hf_tokenizer_json.h).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "text/rank_table.h"

namespace waste::text {

// (left id, right id) -> (priority, result id): open addressing.
class MergeTable {
public:
    // Why: the largest real list (gpt-oss) has 446,189 merges.
    static constexpr size_t max_merges = size_t{1} << 23;

    struct Merge {
        uint32_t priority;
        uint32_t result;
    };

    explicit MergeTable(size_t expected = 0);
    // A pair given again replaces the earlier entry (Hugging Face builds its
    // map the same way: the later line wins).
    void add(uint32_t left, uint32_t right, Merge merge);
    const Merge* find(uint32_t left, uint32_t right) const;
    size_t size() const { return count_; }

private:
    struct Slot {
        uint64_t key = empty_key;
        Merge merge{};
    };
    static constexpr uint64_t empty_key = UINT64_MAX;
    void grow();
    std::vector<Slot> slots_;  // [power of two >= 2 * count]
    uint64_t mask_ = 0;
    size_t count_ = 0;
};

// Reusable buffers, so that encoding a long text allocates once.
struct MergeScratch {
    struct Symbol {
        uint32_t id;
        int32_t previous, next;  // -1: none
        bool alive;
    };
    struct Candidate {
        uint32_t priority;
        uint32_t position;  // the left symbol
        uint32_t left, right;  // the ids the pair had when queued
    };
    std::vector<Symbol> symbols;
    std::vector<Candidate> heap;
};

// Appends the ids of piece (non-empty) to out. vocab holds every single
// byte (RankTable guarantees it).
void merge_pair_encode(std::string_view piece, const RankTable& vocab, const MergeTable& merges, bool ignore_merges,
                       MergeScratch& scratch, std::vector<int32_t>& out);

}  // namespace waste::text
