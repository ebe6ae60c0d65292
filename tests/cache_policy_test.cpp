// cache_policy_test.cpp — the expert cache's bookkeeping (runtime/cache_index)
// and its policies (runtime/cache_policy): exact hits on hand-made sequences,
// pins never evicted, "no free slot" a hard WASTE_ERR_BUDGET naming the
// record, policy names.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "platform/error.h"
#include "runtime/cache_index.h"
#include "runtime/cache_policy.h"

namespace {

using waste::runtime::CacheIndex;
using waste::runtime::CacheLookup;
using waste::runtime::CacheKey;
using waste::runtime::CachePolicyKind;

constexpr CachePolicyKind all_policies[] = {CachePolicyKind::reuse, CachePolicyKind::lru, CachePolicyKind::lfru};

// Looks up each key as its own group (pins released after each).
uint64_t replay_singles(CacheIndex& index, const std::vector<CacheKey>& keys) {
    const uint64_t before = index.hits();
    for (const CacheKey& k : keys) {
        index.lookup(k.layer, k.expert);
        index.unpin_all();
    }
    return index.hits() - before;
}

TEST(CachePolicyNames, ParseAndName) {
    EXPECT_EQ(waste::runtime::parse_cache_policy("lru"), CachePolicyKind::lru);
    EXPECT_EQ(waste::runtime::parse_cache_policy("lfru"), CachePolicyKind::lfru);
    EXPECT_EQ(waste::runtime::parse_cache_policy("reuse"), CachePolicyKind::reuse);
    EXPECT_EQ(waste::runtime::parse_cache_policy("default"), waste::runtime::default_cache_policy);
    for (CachePolicyKind kind : all_policies)
        EXPECT_EQ(waste::runtime::parse_cache_policy(waste::runtime::cache_policy_name(kind)), kind);
    try {
        waste::runtime::parse_cache_policy("mru");
        FAIL() << "mru parsed";
    } catch (const waste::Error& e) {
        EXPECT_EQ(e.status(), WASTE_ERR_INVALID_ARGUMENT);
        EXPECT_NE(std::string(e.what()).find("'mru'"), std::string::npos) << e.what();
    }
}

// A B C A D B through 3 slots: A hits once; D evicts B (least recent), B
// then evicts C.
TEST(LruPolicy, HandSequence) {
    CacheIndex index(3, CachePolicyKind::lru);
    const CacheKey a{0, 1}, b{0, 2}, c{0, 3}, d{0, 4};
    EXPECT_EQ(replay_singles(index, {a, b, c, a, d}), 1u);
    EXPECT_TRUE(index.contains(0, 1));
    EXPECT_FALSE(index.contains(0, 2));
    EXPECT_EQ(replay_singles(index, {b}), 0u);
    EXPECT_FALSE(index.contains(0, 3));
    EXPECT_TRUE(index.contains(0, 1) && index.contains(0, 4) && index.contains(0, 2));
    EXPECT_EQ(index.hits(), 1u);
    EXPECT_EQ(index.misses(), 5u);
}

// Lookahead accounting (ExpertCache's prefetch_wasted): a speculative fill
// evicted before any demand lookup is reported as evicted unused; one that a
// lookup used, or a demand fill, is not. 2 slots under LRU.
TEST(LruPolicy, ASpeculativeFillEvictedBeforeUseIsReportedUnused) {
    CacheIndex index(2, CachePolicyKind::lru);
    CacheLookup spec;
    ASSERT_TRUE(index.fill_speculative(0, 1, 0, &spec));  // A, speculative
    index.unpin(spec.slot);
    CacheLookup demand = index.lookup(0, 2);  // B, demand
    index.unpin(demand.slot);
    CacheLookup c = index.lookup(0, 3);  // C evicts A (least recent), never used
    index.unpin(c.slot);
    EXPECT_TRUE(c.evicted);
    EXPECT_EQ(c.evicted_key.expert, 1);
    EXPECT_TRUE(c.evicted_unused);
    CacheLookup d = index.lookup(0, 4);  // D evicts B, a demand fill
    index.unpin(d.slot);
    EXPECT_TRUE(d.evicted);
    EXPECT_FALSE(d.evicted_unused);
    ASSERT_TRUE(index.fill_speculative(0, 5, 0, &spec));  // E, speculative, evicts C
    index.unpin(spec.slot);
    EXPECT_FALSE(spec.evicted_unused);
    CacheLookup used = index.lookup(0, 5);  // E used: a prefetched hit
    index.unpin(used.slot);
    EXPECT_TRUE(used.hit && used.prefetched);
    CacheLookup f = index.lookup(0, 6);  // F evicts D
    index.unpin(f.slot);
    CacheLookup g = index.lookup(0, 7);  // G evicts E, used
    index.unpin(g.slot);
    EXPECT_EQ(g.evicted_key.expert, 5);
    EXPECT_FALSE(g.evicted_unused);
}

// A A A B B C through 3 slots, then D evicts C (1 use); E evicts D; C comes
// back with 2 uses (counts outlive eviction) and evicts E (1 use); A (3) and
// B (2) stay throughout.
TEST(LfruPolicy, HandSequence) {
    CacheIndex index(3, CachePolicyKind::lfru);
    const CacheKey a{0, 1}, b{0, 2}, c{0, 3}, d{0, 4}, e{0, 5};
    EXPECT_EQ(replay_singles(index, {a, a, a, b, b, c}), 3u);
    EXPECT_EQ(replay_singles(index, {d}), 0u);
    EXPECT_FALSE(index.contains(0, 3));
    EXPECT_EQ(replay_singles(index, {e}), 0u);
    EXPECT_FALSE(index.contains(0, 4));
    EXPECT_EQ(replay_singles(index, {c}), 0u);
    EXPECT_FALSE(index.contains(0, 5));
    EXPECT_TRUE(index.contains(0, 1) && index.contains(0, 2) && index.contains(0, 3));
    // D returns with 2 uses: B and C have 2 as well, and B is the least recent
    EXPECT_EQ(replay_singles(index, {d}), 0u);
    EXPECT_FALSE(index.contains(0, 2));
    EXPECT_TRUE(index.contains(0, 1) && index.contains(0, 3) && index.contains(0, 4));
}

// Each token: expert 0 of layer 0 (used by every token), then a new expert in
// layers 1 and 2, through 2 slots. LRU evicts the hot record every time it is
// about to be needed: no hits at all. LFRU loses it once (equal counts at
// the first eviction) and then keeps it: T - 2. Ours too: at the first
// eviction it knows nothing of either record, and keeps the one whose layer
// comes round first, the hot one; from then on it has seen it return at
// every visit: T - 2 (Belady: T - 1). (Before a record of the layer being
// visited got only what is left of the visit's chance, ours lost the hot
// record for 4 tokens, T - 5: a one-time record of the current layer looked
// nearer its chance.)
TEST(Policies, HotRecordAmongOneTimeRecords) {
    constexpr int tokens = 40;
    std::vector<CacheKey> keys;
    for (int t = 0; t < tokens; ++t) {
        keys.push_back({0, 0});
        keys.push_back({1, 100 + t});
        keys.push_back({2, 100 + t});
    }
    CacheIndex lru(2, CachePolicyKind::lru), lfru(2, CachePolicyKind::lfru), reuse(2, CachePolicyKind::reuse);
    EXPECT_EQ(replay_singles(lru, keys), 0u);
    EXPECT_EQ(replay_singles(lfru, keys), static_cast<uint64_t>(tokens - 2));
    EXPECT_EQ(replay_singles(reuse, keys), static_cast<uint64_t>(tokens - 2));
}

// Ours learns which records come back: experts 0-3 of one layer return every
// token, among a stream of one-time experts, through 6 slots with a group of
// 5 pinned at a time. Every one-time record is evicted first: all four hit
// on every token after the first.
TEST(ReusePolicy, KeepsReturningRecordsOverOneTimeOnes) {
    CacheIndex index(6, CachePolicyKind::reuse);
    constexpr int tokens = 60, learn = 1;
    uint64_t late_hits = 0;
    for (int t = 0; t < tokens; ++t) {
        const uint64_t before = index.hits();
        for (int e : {0, 1, 2, 3, 1000 + t}) index.lookup(0, e);
        index.unpin_all();
        if (t >= learn) late_hits += index.hits() - before;
    }
    EXPECT_EQ(late_hits, 4u * (tokens - learn));
}

TEST(CacheIndex, PinnedSlotsAreNeverEvicted) {
    std::mt19937 random(7);
    for (CachePolicyKind kind : all_policies) {
        CacheIndex index(12, kind);
        for (int group = 0; group < 400; ++group) {
            const int layer = group % 5, size = 1 + static_cast<int>(random() % 8);
            std::vector<int> experts;
            while (static_cast<int>(experts.size()) < size) {
                const int e = static_cast<int>(random() % 24);
                if (std::find(experts.begin(), experts.end(), e) == experts.end()) experts.push_back(e);
            }
            for (size_t i = 0; i < experts.size(); ++i) {
                index.lookup(layer, experts[i]);
                for (size_t j = 0; j <= i; ++j)
                    ASSERT_TRUE(index.contains(layer, experts[j]))
                        << waste::runtime::cache_policy_name(kind) << ": pinned expert " << experts[j] << " evicted in group " << group;
            }
            EXPECT_EQ(index.pinned_count(), experts.size());
            index.unpin_all();
        }
    }
}

TEST(CacheIndex, NoFreeSlotIsBudgetError) {
    for (CachePolicyKind kind : all_policies) {
        CacheIndex index(2, kind);
        index.lookup(3, 10);
        index.lookup(3, 11);
        try {
            index.lookup(3, 12);
            FAIL() << "a third record fit in 2 pinned slots";
        } catch (const waste::Error& e) {
            EXPECT_EQ(e.status(), WASTE_ERR_BUDGET);
            EXPECT_NE(std::string(e.what()).find("expert 12 of layer 3"), std::string::npos) << e.what();
        }
        // a record already held is still served while all are pinned
        EXPECT_TRUE(index.lookup(3, 10).hit);
        index.unpin_all();
        EXPECT_FALSE(index.lookup(3, 12).hit);
    }
}

TEST(CacheIndex, ForgetFreesTheSlot) {
    CacheIndex index(2, CachePolicyKind::reuse);
    const auto first = index.lookup(0, 1);
    index.forget(first.slot);
    EXPECT_FALSE(index.contains(0, 1));
    EXPECT_EQ(index.pinned_count(), 0u);
    index.lookup(0, 2);
    const auto again = index.lookup(0, 1);
    EXPECT_FALSE(again.hit);
    EXPECT_FALSE(again.evicted);  // it took the freed slot
}

TEST(CacheIndex, ZeroSlotsRefused) {
    EXPECT_THROW(CacheIndex(0, CachePolicyKind::lru), waste::Error);
}

}  // namespace
