// rank_table.cpp — parsing a tiktoken rank file and the bytes -> rank index
// (rank_table.h).
#include "text/rank_table.h"

#include <algorithm>
#include <cstring>

#include "platform/error.h"
#include "text/base64.h"

namespace waste::text {
namespace {

// Up to 8 bytes as a little-endian word, zero-padded; a byte loop, since a
// variable-length memcpy is a library call.
inline uint64_t read_word(const char* p, size_t n) {
    if (n >= 8) {
        uint64_t word;
        std::memcpy(&word, p, 8);
        return word;
    }
    uint64_t word = 0;
    for (size_t i = 0; i < n; ++i) word |= static_cast<uint64_t>(static_cast<uint8_t>(p[i])) << (8 * i);
    return word;
}

inline uint64_t mix(uint64_t a, uint64_t b) {
    const __uint128_t product = static_cast<__uint128_t>(a) * b;
    return static_cast<uint64_t>(product) ^ static_cast<uint64_t>(product >> 64);
}

constexpr uint64_t k0 = 0xa0761d6478bd642full, k1 = 0xe7037ed1a0b428dbull, k2 = 0x8ebc6af09c88c6e3ull;

// The hash of a key whose first 8 bytes are head.
inline uint64_t hash_key(uint64_t head, std::string_view bytes) {
    if (bytes.size() <= 8) return mix(head ^ k1, bytes.size() ^ k2);
    return hash_bytes(bytes);
}

}  // namespace

std::string escape_bytes(std::string_view bytes) {
    std::string out;
    for (char ch : bytes) {
        const auto byte = static_cast<uint8_t>(ch);
        if (byte >= 0x20 && byte < 0x7F && ch != '\\' && ch != '"') out += ch;
        else out += fmt::format("\\x{:02x}", byte);
    }
    return out;
}

// A small multiply-mix hash (wyhash's folding step): tokens are short, so
// one or two 64-bit reads cover almost every key.
uint64_t hash_bytes(std::string_view bytes) {
    const char* p = bytes.data();
    size_t n = bytes.size();
    if (n <= 8) return mix(read_word(p, n) ^ k1, n ^ k2);
    uint64_t seed = k0 ^ n;
    while (n > 16) {
        seed = mix(read_word(p, 8) ^ k1, read_word(p + 8, 8) ^ seed);
        p += 16;
        n -= 16;
    }
    const uint64_t a = n > 8 ? read_word(p, 8) : read_word(p, n);
    const uint64_t b = n > 8 ? read_word(p + 8, n - 8) : 0;
    return mix(a ^ k1, b ^ seed ^ k2);
}

RankTable RankTable::parse(std::string_view text, const std::string& where) {
    std::vector<Entry> lines;
    std::string scratch;  // decoded bytes of every line, in file order
    size_t line_number = 0;
    size_t position = 0;
    while (position < text.size()) {
        size_t end = text.find('\n', position);
        if (end == std::string_view::npos) end = text.size();
        std::string_view line = text.substr(position, end - position);
        position = end + 1;
        ++line_number;
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (line.empty()) continue;
        if (line.size() > max_line_bytes)
            fail_format("{} line {}: {} bytes long, more than the {} a rank line may have", where, line_number,
                        line.size(), max_line_bytes);
        const size_t space = line.find(' ');
        if (space == std::string_view::npos)
            fail_format("{} line {}: expected \"base64 rank\", got no space", where, line_number);
        const std::string_view token_text = line.substr(0, space);
        std::string_view rank_text = line.substr(space + 1);
        while (!rank_text.empty() && rank_text.front() == ' ') rank_text.remove_prefix(1);
        if (rank_text.empty() || rank_text.size() > 9 ||
            !std::all_of(rank_text.begin(), rank_text.end(), [](char c) { return c >= '0' && c <= '9'; }))
            fail_format("{} line {}: rank '{}' is not a decimal number", where, line_number, rank_text);
        uint64_t rank = 0;
        for (char c : rank_text) rank = rank * 10 + static_cast<uint64_t>(c - '0');
        if (rank > max_rank)
            fail_format("{} line {}: rank {} is out of range [0, {}]", where, line_number, rank, max_rank);
        const size_t offset = scratch.size();
        if (!decode_base64(token_text, scratch))
            fail_format("{} line {}: '{}' is not canonical base64", where, line_number, token_text);
        const size_t length = scratch.size() - offset;
        if (length > max_token_bytes)
            fail_format("{} line {}: token of {} bytes, more than {}", where, line_number, length, max_token_bytes);
        lines.push_back({static_cast<uint32_t>(rank), static_cast<uint32_t>(offset), static_cast<uint32_t>(length),
                         line_number});
    }
    return from_entries(lines, scratch, where, "line");
}

RankTable RankTable::from_entries(const std::vector<Entry>& lines, std::string_view scratch, const std::string& where,
                                  std::string_view unit) {
    if (lines.empty()) fail_format("{}: no ranks", where);
    uint32_t highest = 0;
    for (const Entry& entry : lines) {
        if (entry.rank > max_rank)
            fail_format("{} {} {}: rank {} is out of range [0, {}]", where, unit, entry.position, entry.rank, max_rank);
        if (entry.length > max_token_bytes)
            fail_format("{} {} {}: token of {} bytes, more than {}", where, unit, entry.position, entry.length,
                        max_token_bytes);
        if (static_cast<size_t>(entry.offset) + entry.length > scratch.size())
            fail(WASTE_ERR_INTERNAL, "{} {} {}: token bytes outside the arena", where, unit, entry.position);
        highest = std::max(highest, entry.rank);
    }

    RankTable table;
    // Lay the tokens out in rank order, refusing a rank given twice.
    std::vector<uint32_t> line_of_rank(static_cast<size_t>(highest) + 1, UINT32_MAX);
    for (uint32_t i = 0; i < lines.size(); ++i) {
        auto& slot = line_of_rank[lines[i].rank];
        if (slot != UINT32_MAX)
            fail_format("{} {} {}: rank {} was already given on {} {}", where, unit, lines[i].position,
                        lines[i].rank, unit, lines[slot].position);
        slot = i;
    }
    table.arena_.reserve(scratch.size());
    table.ends_.resize(line_of_rank.size());
    for (size_t rank = 0; rank < line_of_rank.size(); ++rank) {
        if (line_of_rank[rank] != UINT32_MAX) {
            const Entry& entry = lines[line_of_rank[rank]];
            table.arena_.append(scratch.substr(entry.offset, entry.length));
            table.longest_ = std::max<size_t>(table.longest_, entry.length);
        }
        table.ends_[rank] = static_cast<uint32_t>(table.arena_.size());
    }
    table.count_ = static_cast<uint32_t>(lines.size());

    // The index; a token given twice is found while inserting it.
    size_t capacity = 16;
    while (capacity < 2 * static_cast<size_t>(table.count_)) capacity *= 2;
    table.slots_.assign(capacity, Slot{});
    table.mask_ = capacity - 1;
    for (uint32_t rank = 0; rank < table.ends_.size(); ++rank) {
        const std::string_view bytes = table.bytes(rank);
        if (line_of_rank[rank] == UINT32_MAX) continue;
        const uint64_t head = read_word(bytes.data(), std::min<size_t>(bytes.size(), 8));
        const uint64_t hash = hash_key(head, bytes);
        for (uint64_t i = hash & table.mask_;; i = (i + 1) & table.mask_) {
            Slot& slot = table.slots_[i];
            if (slot.rank_plus_one == 0) {
                slot = Slot{head, rank + 1, static_cast<uint32_t>(bytes.size())};
                break;
            }
            if (slot.head == head && table.bytes(slot.rank_plus_one - 1) == bytes)
                fail_format("{} {} {}: token \"{}\" (rank {}) was already given on {} {} (rank {})", where, unit,
                            lines[line_of_rank[rank]].position, escape_bytes(bytes), rank, unit,
                            lines[line_of_rank[slot.rank_plus_one - 1]].position, slot.rank_plus_one - 1);
        }
    }
    for (int byte = 0; byte < 256; ++byte) {
        const char ch = static_cast<char>(byte);
        table.byte_ranks_[byte] = table.find(std::string_view(&ch, 1));
        if (table.byte_ranks_[byte] == no_rank)
            fail_format("{}: byte 0x{:02x} has no rank (every single byte needs one)", where, byte);
    }
    return table;
}

uint32_t RankTable::find(std::string_view bytes) const {
    const size_t length = bytes.size();
    const uint64_t head = read_word(bytes.data(), std::min<size_t>(length, 8));
    const uint64_t hash = hash_key(head, bytes);
    for (uint64_t i = hash & mask_;; i = (i + 1) & mask_) {
        const Slot& slot = slots_[i];
        if (slot.rank_plus_one == 0) return no_rank;
        if (slot.head == head && slot.length == length) {
            const uint32_t rank = slot.rank_plus_one - 1;
            if (length <= 8 || this->bytes(rank) == bytes) return rank;
        }
    }
}

}  // namespace waste::text
