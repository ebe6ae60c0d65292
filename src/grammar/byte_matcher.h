// byte_matcher.h — runs a Grammar over bytes: the set of parse stacks that
// the bytes so far allow, as a lazily built automaton whose states are
// interned, so a state seen again (the inside of a JSON string, byte after
// byte) costs one table lookup per byte.
//
// A stack is a list of grammar positions: the top is the character class to
// match next, the ones below are where to return when a rule's alternative
// ends. Stacks are interned as (position, parent) nodes, so stacks share
// their tails and a stack is one int32. A state is the sorted set of stacks
// plus, between the bytes of one UTF-8 character, the character read so
// far: a lead byte is accepted only if some stack's class holds a code point
// that can still complete it, so a state is live exactly when some byte
// string continues it. Node 0 is the empty stack: the grammar may end there.
//
// Calling a rule whose reference ends its alternative does not push a
// return (a tail call), so right-recursive repetition (`x*` is
// `r ::= x r | ""`) keeps stacks flat. Left recursion is refused before a
// grammar gets here (grammar.h), so expanding a position always terminates.
//
// Bounds (why: an ambiguous grammar can multiply stacks, and a long output
// can nest deep): a state holds at most max_stacks_per_state stacks and a
// stack is at most max_stack_depth deep — a byte that would exceed either is
// treated as not allowed (the output cannot nest deeper) rather than failing
// the generation — and the automaton's memory is bounded (memory_bytes();
// the owner resets it with rebuilt() between masks, and a step that would
// take it past max_automaton_bytes fails with WASTE_ERR_BUDGET).
//
// One thread's; the Grammar must outlive it.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "grammar/grammar.h"

namespace waste::grammar {

constexpr size_t max_stacks_per_state = 4096;
constexpr uint32_t max_stack_depth = 2048;

class ByteMatcher {
public:
    static constexpr int32_t dead = -1;

    explicit ByteMatcher(const Grammar& grammar);

    int32_t initial() const { return initial_; }
    // The state after one more byte, or `dead`.
    int32_t step(int32_t state, uint8_t byte) {
        State& s = states_[static_cast<size_t>(state)];
        if (!s.next) allocate_table(s);
        int32_t next = s.next[byte];
        if (next != unknown) return next;
        // compute_step may add states and so move states_: index it afresh.
        next = compute_step(state, byte);
        states_[static_cast<size_t>(state)].next[byte] = next;
        return next;
    }
    // The state after `bytes`, or `dead`.
    int32_t walk(int32_t state, std::string_view bytes);
    // Whether the output may end here (the empty stack, no partial character).
    bool can_end(int32_t state) const;
    // Whether the output must end here: nothing may follow.
    bool must_end(int32_t state) const;
    // Whether the state is between characters (no partly read one).
    bool at_boundary(int32_t state) const { return states_[static_cast<size_t>(state)].remaining == 0; }
    // The continuation bytes the partly read character still needs (0 at a boundary).
    uint8_t remaining(int32_t state) const { return states_[static_cast<size_t>(state)].remaining; }
    // The state's stacks (sorted node ids; 0 is the empty stack). Valid until
    // the next step() or walk(), which may move the states.
    std::span<const int32_t> stacks(int32_t state) const { return states_[static_cast<size_t>(state)].stacks; }
    // The class (an index into Grammar::classes) on top of stack `stack` (not 0).
    uint32_t top_class(int32_t stack) const {
        return grammar_.elements[static_cast<size_t>(nodes_[static_cast<size_t>(stack)].position)].index;
    }

    size_t state_count() const { return states_.size(); }
    size_t memory_bytes() const { return memory_; }
    // A fresh automaton holding only `state` (as the new initial state's
    // equal); returns its id there. Frees everything else.
    int32_t rebuilt(int32_t state);

private:
    static constexpr int32_t unknown = -2;
    struct Node {
        int32_t position;  // a grammar position (for the top: a chars element)
        int32_t parent;    // the node below, -1 at the bottom
        uint32_t depth;
    };
    struct State {
        std::vector<int32_t> stacks;  // sorted node ids; 0 = the empty stack
        uint32_t partial = 0;         // the code point's bits so far
        uint8_t remaining = 0;        // continuation bytes still to come
        uint8_t length = 0;           // the character's UTF-8 length
        std::unique_ptr<int32_t[]> next;  // [256] lazily: the state after each byte
    };

    int32_t node(int32_t position, int32_t parent);
    // The stacks whose tops are classes, reached from `position` over `parent`.
    void expand(int32_t position, int32_t parent, std::vector<int32_t>& out);
    int32_t intern(std::vector<int32_t> stacks, uint32_t partial, uint8_t remaining, uint8_t length);
    int32_t compute_step(int32_t state, uint8_t byte);
    void allocate_table(State& s);
    // Counts bytes the automaton is about to take; WASTE_ERR_BUDGET past
    // max_automaton_bytes (grammar_memory.h).
    void grow(size_t bytes);

    const Grammar& grammar_;
    std::vector<Node> nodes_;
    std::unordered_map<uint64_t, int32_t> node_index_;
    std::vector<State> states_;
    std::unordered_map<std::string, int32_t> state_index_;
    std::vector<uint64_t> expanded_;  // scratch: (position, parent) pairs seen in one expansion
    int32_t initial_ = dead;
    size_t memory_ = 0;
};

}  // namespace waste::grammar
