// rank_table.h — a tiktoken rank file (container-v0 §6), parsed and indexed
// both ways: token bytes -> rank (an open-addressing hash table, the lookup
// byte-pair merging does for every candidate pair) and rank -> bytes.
//
// The file is hostile input: every line is bounded (length, base64, rank
// range), a duplicate token or rank is refused, and all 256 single bytes must
// have a rank so that every byte string can be encoded. Errors name the file
// and the line. Ranks may have gaps (p50k_base has one); a gap is an id with
// no bytes.
//
// Deliberately not here: special tokens (specials.h) and the merge itself
// (bpe.h).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace waste::text {

inline constexpr uint32_t no_rank = UINT32_MAX;

class RankTable {
public:
    // Bounds a rank file must keep (why: the largest real vocabularies, o200k
    // and Kimi, have 200k and 164k ranks of at most 128 bytes; these leave
    // ample room and still bound memory).
    static constexpr size_t max_line_bytes = 1024;
    static constexpr size_t max_token_bytes = 512;
    static constexpr uint32_t max_rank = (1u << 24) - 1;

    // Parses the text of a rank file; `where` names it in errors
    // ("model.waste/tokenizer.model").
    static RankTable parse(std::string_view text, const std::string& where);

    // One token of a vocabulary read from another form (a tokenizer.json's
    // vocab): `position` is its 1-based place there, named in errors as
    // "<where> <unit> <position>".
    struct Entry {
        uint32_t rank;
        uint32_t offset;  // of its bytes in the arena handed to from_entries
        uint32_t length;
        size_t position;
    };
    // The same checks and index as parse (ranks up to max_rank, tokens up to
    // max_token_bytes, no token or rank twice, every single byte present).
    static RankTable from_entries(const std::vector<Entry>& entries, std::string_view arena, const std::string& where,
                                  std::string_view unit);

    // The rank of exactly these bytes, or no_rank.
    uint32_t find(std::string_view bytes) const;
    uint32_t byte_rank(uint8_t byte) const { return byte_ranks_[byte]; }

    // The bytes of a rank; empty for a gap or a rank >= size().
    std::string_view bytes(uint32_t rank) const {
        if (rank >= ends_.size()) return {};
        const uint32_t begin = rank == 0 ? 0 : ends_[rank - 1];
        return std::string_view(arena_.data() + begin, ends_[rank] - begin);
    }

    uint32_t size() const { return static_cast<uint32_t>(ends_.size()); }  // highest rank + 1
    uint32_t count() const { return count_; }                              // ranks present
    size_t longest_token() const { return longest_; }

private:
    // A slot holds the first 8 bytes of its token, so that a lookup of a
    // token of up to 8 bytes (nearly every pair BPE tries) touches one cache
    // line and never the arena.
    struct Slot {
        uint64_t head = 0;           // the token's first 8 bytes, little-endian, zero-padded
        uint32_t rank_plus_one = 0;  // 0 = empty
        uint32_t length = 0;
    };

    std::string arena_;                 // every token's bytes, in rank order
    std::vector<uint32_t> ends_;        // [size] end offset of rank r in arena_ (gap: empty)
    std::vector<Slot> slots_;           // [power of two >= 2 * count] open addressing, linear probe
    uint64_t mask_ = 0;
    uint32_t count_ = 0;
    size_t longest_ = 0;
    std::array<uint32_t, 256> byte_ranks_{};
};

// The hash the table uses; exposed for the BPE cache.
uint64_t hash_bytes(std::string_view bytes);

// Bytes for an error message: printable ASCII as is, the rest as \xNN.
std::string escape_bytes(std::string_view bytes);

}  // namespace waste::text
