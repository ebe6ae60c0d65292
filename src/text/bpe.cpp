// bpe.cpp — tiktoken's byte-pair merge, as a flat loop and as a heap (bpe.h).
#include "text/bpe.h"

#include <algorithm>

#include "platform/error.h"

namespace waste::text {
namespace {

using Part = BpeScratch::Part;
using Candidate = BpeScratch::Candidate;

constexpr uint32_t dead = UINT32_MAX;

void emit(std::string_view piece, uint32_t begin, uint32_t end, const RankTable& ranks, std::vector<int32_t>& out) {
    const uint32_t rank = ranks.find(piece.substr(begin, end - begin));
    // Every part is a single byte or a pair whose joined bytes had a rank.
    WASTE_CHECK(rank != no_rank);
    out.push_back(static_cast<int32_t>(rank));
}

// tiktoken's _byte_pair_merge, line for line: parts[i].rank is the rank of
// parts i and i+1 joined; two sentinels end the array.
void merge_quadratic(std::string_view piece, const RankTable& ranks, std::vector<Part>& parts,
                     std::vector<int32_t>& out) {
    const auto n = static_cast<uint32_t>(piece.size());
    parts.clear();
    uint32_t min_rank = no_rank;
    size_t min_index = 0;
    for (uint32_t i = 0; i + 1 < n; ++i) {
        const uint32_t rank = ranks.find(piece.substr(i, 2));
        if (rank < min_rank) {
            min_rank = rank;
            min_index = i;
        }
        parts.push_back({i, rank});
    }
    parts.push_back({n - 1, no_rank});
    parts.push_back({n, no_rank});

    auto pair_rank = [&](size_t i) {
        if (i + 3 >= parts.size()) return no_rank;
        return ranks.find(piece.substr(parts[i].start, parts[i + 3].start - parts[i].start));
    };
    while (min_rank != no_rank) {
        const size_t i = min_index;
        if (i > 0) parts[i - 1].rank = pair_rank(i - 1);
        parts[i].rank = pair_rank(i);
        parts.erase(parts.begin() + static_cast<std::ptrdiff_t>(i) + 1);
        min_rank = no_rank;
        for (size_t k = 0; k + 1 < parts.size(); ++k) {
            if (parts[k].rank < min_rank) {
                min_rank = parts[k].rank;
                min_index = k;
            }
        }
    }
    for (size_t k = 0; k + 1 < parts.size(); ++k) emit(piece, parts[k].start, parts[k + 1].start, ranks, out);
}

// The same merges in the same order: candidates ordered by (rank, start) are
// exactly tiktoken's "lowest rank, leftmost on a tie". A candidate is stale
// when its left part was merged away or its pair no longer ends where it did
// (either part grew); stale candidates are skipped when popped.
void merge_heap(std::string_view piece, const RankTable& ranks, BpeScratch& scratch, std::vector<int32_t>& out) {
    const auto n = static_cast<uint32_t>(piece.size());
    auto& next = scratch.next;
    auto& previous = scratch.previous;
    auto& heap = scratch.heap;
    next.resize(n);
    previous.resize(n);
    heap.clear();
    const auto later = [](const Candidate& a, const Candidate& b) {
        return a.rank != b.rank ? a.rank > b.rank : a.start > b.start;
    };
    for (uint32_t i = 0; i < n; ++i) {
        next[i] = i + 1;
        previous[i] = i == 0 ? dead : i - 1;
        if (i + 1 < n) {
            const uint32_t rank = ranks.find(piece.substr(i, 2));
            if (rank != no_rank) heap.push_back({rank, i, i + 2});
        }
    }
    std::make_heap(heap.begin(), heap.end(), later);
    auto push = [&](uint32_t start, uint32_t pair_end) {
        const uint32_t rank = ranks.find(piece.substr(start, pair_end - start));
        if (rank == no_rank) return;
        heap.push_back({rank, start, pair_end});
        std::push_heap(heap.begin(), heap.end(), later);
    };
    while (!heap.empty()) {
        std::pop_heap(heap.begin(), heap.end(), later);
        const Candidate candidate = heap.back();
        heap.pop_back();
        const uint32_t left = candidate.start;
        if (next[left] == dead || next[left] >= n) continue;
        const uint32_t right = next[left];
        if (next[right] != candidate.pair_end) continue;
        next[left] = next[right];
        if (next[left] < n) previous[next[left]] = left;
        next[right] = dead;
        if (previous[left] != dead) push(previous[left], next[left]);
        if (next[left] < n) push(left, next[next[left]]);
    }
    for (uint32_t start = 0; start < n; start = next[start]) emit(piece, start, next[start], ranks, out);
}

}  // namespace

void byte_pair_encode(std::string_view piece, const RankTable& ranks, BpeScratch& scratch, std::vector<int32_t>& out,
                      MergeAlgorithm algorithm) {
    WASTE_CHECK(!piece.empty() && piece.size() < UINT32_MAX);
    // tiktoken looks the whole piece up first; this is not only a shortcut:
    // a token that merging would not reach is still used when it is the
    // whole piece.
    const uint32_t whole = ranks.find(piece);
    if (whole != no_rank) {
        out.push_back(static_cast<int32_t>(whole));
        return;
    }
    if (algorithm == MergeAlgorithm::automatic)
        algorithm = piece.size() <= quadratic_merge_limit ? MergeAlgorithm::quadratic : MergeAlgorithm::heap;
    if (algorithm == MergeAlgorithm::quadratic) merge_quadratic(piece, ranks, scratch.parts, out);
    else merge_heap(piece, ranks, scratch, out);
}

}  // namespace waste::text
