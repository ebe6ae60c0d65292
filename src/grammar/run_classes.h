// run_classes.h — the vocabulary sorted, once per grammar compile, by how
// its tokens read against the grammar's wide character classes, so the mask
// of a state inside such a class (the inside of a string) is a copy of a
// precomputed bit set plus a check of the few tokens that leave the class,
// not a walk of the whole vocabulary trie (TokenMasker::compute_runs).
//
// Why: inside a JSON string (`[^"\\\x00-\x1F]` repeated) nearly every token
// is allowed, and every new such state — each position of a bounded
// `{0,40}` is one, and a generation's masker starts with none — cost a walk
// of the whole trie (~600,000 nodes at 163,840 tokens: milliseconds, the
// mask's p99).
//
// For a run class K, a token is "pure" when its bytes are whole characters
// of K, optionally ending in an incomplete character whose every completion
// is in K; its length is its characters (the incomplete one counted). Any
// other token is "mixed": m characters of K (its prefix), then the rest,
// which starts at a character that is not in K, or invalid UTF-8, or an
// incomplete character that may complete outside K. From a state where every
// stack's class holds either all of K or none of it, every character of K
// leads to the same next state (the stacks holding K advance, the others
// die), so the states after 0, 1, 2, … characters of K form one chain
// s0, s1, …: a pure token of c characters is allowed exactly when the chain
// reaches s_c, and a mixed token exactly when the chain reaches s_m and its
// rest's bytes are allowed from s_m.
//
// Kept per run class: pure_upto(L), the pure tokens of at most L characters
// as a bit set by token id, L = 0 .. max_run_chars; and the mixed tokens,
// sorted by (m, rest) with each rest's common prefix with the one before, so
// that the check steps each distinct rest prefix once and skips a run of
// rests that share a refused prefix. A token longer than max_run_chars
// characters of K is listed as mixed with m = 0 (checked whole).
//
// A state inside a character (a token ended within one) needs r more
// continuation bytes; only tokens starting with them can follow. For each r
// the run keeps those tokens, grouped by their first r bytes (one step of
// the matcher per group reaches the state after the character), with the
// reading of their remaining bytes, so such a state is not a trie walk
// either.
//
// The run classes are those of the grammar's max_run_candidates widest
// classes that at least a quarter of the tokens are pure in, at most
// max_run_classes of them: only those pay for their bit sets. Memory, per
// compiled grammar: at most max_run_classes × ((max_run_chars + 1) × vocab/8
// bytes + 12 bytes and the rest's bytes per mixed token + 3 × 8 bytes per
// token starting with a continuation byte) — at 163,840 tokens under 3 MB of
// bit sets (kimi-mini's pairs: one run class, 17 sets, 12,000 mixed tokens).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "grammar/grammar.h"

namespace waste::grammar {

class VocabularyTrie;

constexpr size_t max_run_classes = 4;
constexpr size_t max_run_candidates = 8;  // the widest classes tried
constexpr uint32_t max_run_chars = 32;
// A grammar's run classes together (why 6 MiB: at 163,840 tokens one run
// class's bit sets are ~0.7 MB and its mixed and continued tokens a few MB
// at worst; grammar_memory.h plans a compiled grammar at 8 MiB). A class
// that would pass it is left out: it costs speed, never correctness.
constexpr size_t max_run_class_bytes = 6u << 20;

class RunClasses {
public:
    RunClasses(const Grammar& grammar, const VocabularyTrie& trie);

    enum class Relation : uint8_t { disjoint, superset, partial };
    struct Mixed {
        int32_t id;
        uint32_t rest;          // the rest's bytes: rest_bytes[rest, rest + length)
        uint16_t length;
        uint8_t prefix_chars;   // m: the characters of K before the rest
        uint8_t common;         // bytes the rest shares with the previous entry's (0 where m differs)
    };
    // A token that starts inside a character: its first r bytes (r = 1..3,
    // the continuation bytes a partly read character still needs) finish
    // that character, and the bytes after them read against K as above.
    struct Continued {
        int32_t id;
        uint8_t chars;  // pure: its characters after the r bytes; mixed: m
        uint8_t rest;   // mixed: the rest's first byte in the token
        uint8_t kind;   // continued_pure, continued_mixed or continued_whole
    };
    static constexpr uint8_t continued_pure = 0, continued_mixed = 1, continued_whole = 2;  // whole: checked byte by byte
    struct Run {
        std::string representative;          // one member of K, as UTF-8
        uint32_t chars = 0;                  // the most characters of any pure token, ≤ max_run_chars
        std::vector<uint64_t> pure;          // [(L) * words + word]: pure_upto(L), L = 0 .. chars
        std::vector<Mixed> mixed;            // by (m, rest bytes)
        std::string rest_bytes;              // the mixed tokens' rests, in their order (read in sequence)
        // [r - 1]: the tokens whose first min(r, length) bytes are all
        // continuation bytes (any other is refused inside a character),
        // by their first r bytes.
        std::vector<Continued> continued[3];
        // [r - 1]: the runs of continued[r - 1] that share their first r
        // bytes (so a check reads no token's bytes for a pure one).
        struct Group {
            char head[3];
            uint32_t end;  // one past the group's last entry
        };
        std::vector<Group> continued_groups[3];
        std::vector<Relation> relations;     // [grammar class]: how it stands to K
    };

    const std::vector<Run>& runs() const { return runs_; }
    size_t words() const { return words_; }  // 64-bit words of one bit set
    const uint64_t* pure_upto(const Run& run, uint32_t chars) const { return run.pure.data() + chars * words_; }
    size_t memory_bytes() const;
    static size_t run_bytes(const Run& run);

private:
    std::vector<Run> runs_;
    size_t words_ = 0;
};

}  // namespace waste::grammar
