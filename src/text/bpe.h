// bpe.h — byte-pair encoding of one pre-tokenized piece, exactly as tiktoken
// does it: a piece that is itself a token is that token; otherwise start
// from single bytes and repeatedly merge the adjacent pair whose joined bytes
// have the lowest rank (the leftmost such pair on a tie) until no adjacent
// pair is a token.
//
// Two implementations of the same rule: tiktoken's own O(n^2) loop over a
// flat array, fastest for the short pieces that are nearly all of real
// text, and a min-heap over a linked list, O(n log n), for long pieces (a
// run of 100,000 spaces or of Han characters is one piece). Both apply the
// same merges in the same order, so the choice never changes an id; the
// tests check them against each other.
//
// Deliberately not here: splitting text into pieces (pretokenizer.h).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "text/rank_table.h"

namespace waste::text {

enum class MergeAlgorithm { automatic, quadratic, heap };

// Reusable buffers, so that encoding a long text allocates once.
struct BpeScratch {
    struct Part {
        uint32_t start;
        uint32_t rank;  // rank of this part joined with the next; no_rank if none
    };
    struct Candidate {
        uint32_t rank;
        uint32_t start;     // the left part's first byte
        uint32_t pair_end;  // one past the right part's last byte
    };
    std::vector<Part> parts;
    std::vector<uint32_t> next;  // [n] start of the part after the one at i; the dead mark for merged-away parts
    std::vector<uint32_t> previous;
    std::vector<Candidate> heap;
};

// Pieces up to this many bytes use the quadratic loop (measured: the heap's
// bookkeeping costs more than the rescans below this length).
inline constexpr size_t quadratic_merge_limit = 128;

// Appends the ids of piece (non-empty) to out.
void byte_pair_encode(std::string_view piece, const RankTable& ranks, BpeScratch& scratch, std::vector<int32_t>& out,
                      MergeAlgorithm algorithm = MergeAlgorithm::automatic);

}  // namespace waste::text
