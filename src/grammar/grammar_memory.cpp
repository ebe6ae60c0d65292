#include "grammar/grammar_memory.h"

#include <algorithm>
#include <string>

#include "grammar/grammar.h"
#include "grammar/run_classes.h"
#include "grammar/token_mask.h"

namespace waste::grammar {

static_assert(max_compiled_grammar_bytes == max_grammar_rule_bytes + max_run_class_bytes);

uint64_t grammar_rule_bytes(const Grammar& grammar) {
    uint64_t n = grammar.elements.capacity() * sizeof(Element) + grammar.alternatives.capacity() * sizeof(std::vector<int32_t>) +
                 grammar.rule_names.capacity() * sizeof(std::string) + grammar.classes.capacity() * sizeof(CharClass);
    for (const auto& a : grammar.alternatives) n += a.capacity() * sizeof(int32_t);
    for (const auto& name : grammar.rule_names) n += name.capacity() + 1;
    for (const auto& c : grammar.classes) n += c.ranges.capacity() * sizeof(CharRange);
    return n;
}

uint64_t mask_entry_bytes(uint64_t vocab) { return (vocab + 63) / 64 * sizeof(uint64_t) + 64; }

uint64_t mask_cache_bytes(uint64_t vocab) { return std::min<uint64_t>(512 * mask_entry_bytes(vocab), 8u << 20); }

uint64_t grammar_slot_bytes(uint64_t vocab) {
    const uint64_t mask = (vocab + 63) / 64 * sizeof(uint64_t);
    // The automaton counts its entries (byte_matcher.cpp: a state's 1 KiB
    // table, its key twice and its record; a node and its hash entry); its
    // vectors and hash buckets hold spare capacity beyond that, a quarter
    // more at most for tables that dominate it.
    const uint64_t automaton = max_automaton_bytes + max_automaton_bytes / 4;
    return max_compiled_grammar_bytes + automaton + mask_cache_bytes(vocab) + mask;
}

uint64_t grammar_compile_scratch_bytes(uint64_t vocab) {
    // Compiling reads every token against each candidate class
    // (run_classes.cpp: a reading per token), and parses the grammar's text
    // (at most gbnf_parser.h's 1 MiB) into builder rules about the size of
    // the result (at most max_grammar_rule_bytes) before checking it.
    return vocab * 16 + (1u << 20) + max_grammar_rule_bytes;
}

uint64_t vocabulary_trie_bound_bytes(uint64_t vocab, uint64_t token_bytes) {
    // At most one node per token byte (and the root); each token's id in
    // token_ids; each token's bytes copied once into a std::string (its
    // heap block with the allocator's header where it is not inline).
    const uint64_t nodes = (token_bytes + 1) * sizeof(VocabularyTrie::Node);
    const uint64_t ids = vocab * sizeof(int32_t);
    const uint64_t strings = vocab * (sizeof(std::string) + 32) + token_bytes;
    return nodes + ids + strings;
}

}  // namespace waste::grammar
