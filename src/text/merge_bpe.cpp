// merge_bpe.cpp — the merge table and the merge-priority loop (merge_bpe.h).
#include "text/merge_bpe.h"

#include <algorithm>

#include "platform/error.h"

namespace waste::text {
namespace {

inline uint64_t pair_key(uint32_t left, uint32_t right) { return (static_cast<uint64_t>(left) << 32) | right; }

inline uint64_t pair_hash(uint64_t key) {
    const __uint128_t product = static_cast<__uint128_t>(key ^ 0xa0761d6478bd642full) * 0xe7037ed1a0b428dbull;
    return static_cast<uint64_t>(product) ^ static_cast<uint64_t>(product >> 64);
}

// Min-heap order: lowest priority first, then leftmost.
inline bool later(const MergeScratch::Candidate& a, const MergeScratch::Candidate& b) {
    return a.priority != b.priority ? a.priority > b.priority : a.position > b.position;
}

}  // namespace

MergeTable::MergeTable(size_t expected) {
    size_t capacity = 16;
    while (capacity < 2 * expected) capacity *= 2;
    slots_.assign(capacity, Slot{});
    mask_ = capacity - 1;
}

void MergeTable::grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.size() * 2, Slot{});
    mask_ = slots_.size() - 1;
    for (const Slot& slot : old) {
        if (slot.key == empty_key) continue;
        for (uint64_t i = pair_hash(slot.key) & mask_;; i = (i + 1) & mask_)
            if (slots_[i].key == empty_key) {
                slots_[i] = slot;
                break;
            }
    }
}

void MergeTable::add(uint32_t left, uint32_t right, Merge merge) {
    if (2 * (count_ + 1) > slots_.size()) grow();
    const uint64_t key = pair_key(left, right);
    for (uint64_t i = pair_hash(key) & mask_;; i = (i + 1) & mask_) {
        Slot& slot = slots_[i];
        if (slot.key == key) {
            slot.merge = merge;
            return;
        }
        if (slot.key == empty_key) {
            slot = Slot{key, merge};
            ++count_;
            return;
        }
    }
}

const MergeTable::Merge* MergeTable::find(uint32_t left, uint32_t right) const {
    const uint64_t key = pair_key(left, right);
    for (uint64_t i = pair_hash(key) & mask_;; i = (i + 1) & mask_) {
        const Slot& slot = slots_[i];
        if (slot.key == key) return &slot.merge;
        if (slot.key == empty_key) return nullptr;
    }
}

void merge_pair_encode(std::string_view piece, const RankTable& vocab, const MergeTable& merges, bool ignore_merges,
                       MergeScratch& scratch, std::vector<int32_t>& out) {
    WASTE_CHECK(!piece.empty() && piece.size() < INT32_MAX);
    if (piece.size() == 1) {
        out.push_back(static_cast<int32_t>(vocab.byte_rank(static_cast<uint8_t>(piece[0]))));
        return;
    }
    if (ignore_merges) {
        if (const uint32_t whole = vocab.find(piece); whole != no_rank) {
            out.push_back(static_cast<int32_t>(whole));
            return;
        }
    }
    auto& symbols = scratch.symbols;
    auto& heap = scratch.heap;
    const auto n = static_cast<uint32_t>(piece.size());
    symbols.resize(n);
    heap.clear();
    for (uint32_t i = 0; i < n; ++i)
        symbols[i] = {vocab.byte_rank(static_cast<uint8_t>(piece[i])), static_cast<int32_t>(i) - 1,
                      i + 1 < n ? static_cast<int32_t>(i + 1) : -1, true};
    auto queue = [&](uint32_t position) {
        const MergeScratch::Symbol& left = symbols[position];
        if (left.next < 0) return;
        const uint32_t right = symbols[static_cast<uint32_t>(left.next)].id;
        if (const MergeTable::Merge* merge = merges.find(left.id, right)) {
            heap.push_back({merge->priority, position, left.id, right});
            std::push_heap(heap.begin(), heap.end(), later);
        }
    };
    for (uint32_t i = 0; i + 1 < n; ++i) queue(i);
    while (!heap.empty()) {
        std::pop_heap(heap.begin(), heap.end(), later);
        const MergeScratch::Candidate top = heap.back();
        heap.pop_back();
        MergeScratch::Symbol& left = symbols[top.position];
        if (!left.alive || left.next < 0 || left.id != top.left) continue;
        MergeScratch::Symbol& right = symbols[static_cast<uint32_t>(left.next)];
        if (right.id != top.right) continue;  // a merge to the right changed the pair
        left.id = merges.find(top.left, top.right)->result;
        right.alive = false;
        left.next = right.next;
        if (right.next >= 0) symbols[static_cast<uint32_t>(right.next)].previous = static_cast<int32_t>(top.position);
        if (left.previous >= 0) queue(static_cast<uint32_t>(left.previous));
        queue(top.position);
    }
    for (int32_t i = 0; i >= 0; i = symbols[static_cast<uint32_t>(i)].next)
        out.push_back(static_cast<int32_t>(symbols[static_cast<uint32_t>(i)].id));
}

}  // namespace waste::text
