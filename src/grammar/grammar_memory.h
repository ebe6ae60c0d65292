// grammar_memory.h — what constrained decoding may hold in memory, so that
// the memory plan can reserve it (runtime/memory_plan.h, the "grammar" line)
// and the grammar code can keep within it.
//
// A model opened with waste_open_options.grammars = N reserves:
//   - once, the vocabulary's byte trie (token_mask.h), bounded from the
//     size of the container's tokenizer file: a token's bytes are at most
//     the characters that spell it there (base64 in tokenizer.model), so
//     the trie has at most that many nodes;
//   - one compile's scratch (compiles take turns);
//   - N grammar slots, each max_compiled_grammar_bytes towards a pool that
//     compiled grammars draw what they hold from (a grammar's rules and run
//     classes; its rules above max_grammar_rule_bytes are refused), and one
//     generation's state (its automaton, at most max_automaton_bytes however
//     the grammar branches, and its mask cache, at most
//     mask_cache_bytes(vocab)).
// The C API counts them (api/grammar_api.cpp): a compile beyond the pool or
// a state beyond N is refused with WASTE_ERR_BUDGET.
//
// Deliberately not here: the structures themselves (token_mask.h,
// run_classes.h, byte_matcher.h).
#pragma once

#include <cstddef>
#include <cstdint>

namespace waste::grammar {

// The automaton is rebuilt from the current state before a mask once it
// holds more than this (why 2 MiB: ~1,700 states with their byte tables,
// more than a JSON Schema's generation revisits; a rebuild only costs
// speed) ...
constexpr size_t automaton_rebuild_bytes = 2u << 20;
// ... and one mask that would grow it past this fails the generation
// (WASTE_ERR_BUDGET): a grammar that ambiguous over this vocabulary cannot
// be masked within its planned memory (why 8 MiB: ~7,000 new states in one
// mask; an enum of a thousand strings, whose every prefix is a state, needs
// about 3,000).
constexpr size_t max_automaton_bytes = 8u << 20;

// A compiled grammar's rules and classes (why 2 MiB: a large tool schema's
// rules are a few hundred KB; a compile above it is refused) and its run
// classes (run_classes.h: max_run_class_bytes, 6 MiB; a class above it is
// left out, which costs speed only).
constexpr size_t max_grammar_rule_bytes = 2u << 20;
constexpr size_t max_compiled_grammar_bytes = (2u << 20) + (6u << 20);

struct Grammar;
// What a compiled grammar's rules and classes hold (capacity, not size).
uint64_t grammar_rule_bytes(const Grammar& grammar);

// One memoised mask in the mask cache: its bit set (a bit per token id)
// and its hash entry (why 64: the node, the key and a bucket).
uint64_t mask_entry_bytes(uint64_t vocab);

// The mask cache holds at most this many bytes of memoised masks: up to
// 512 masks (vocab/8 bytes each), at most 8 MiB; it is cleared when full.
uint64_t mask_cache_bytes(uint64_t vocab);

// One grammar slot: max_compiled_grammar_bytes towards the compiled
// grammars' pool and one generation's state, with the mask being built.
uint64_t grammar_slot_bytes(uint64_t vocab);

// One compile's scratch (the C API compiles one at a time per model).
uint64_t grammar_compile_scratch_bytes(uint64_t vocab);

// The vocabulary's byte trie and the copy of every token's bytes it keeps,
// for a vocabulary of `vocab` ids whose token bytes total at most
// `token_bytes` (the tokenizer file's size bounds it).
uint64_t vocabulary_trie_bound_bytes(uint64_t vocab, uint64_t token_bytes);

// The most grammar slots a plan takes (why: like the sessions, a bound that
// keeps the plan's sum from overflowing; a server holds a few per slot).
constexpr uint32_t max_planned_grammars = 4096;

}  // namespace waste::grammar
