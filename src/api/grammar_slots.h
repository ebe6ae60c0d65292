// grammar_slots.h — the grammar reserve of a model's memory plan
// (waste_open_options.grammars; grammar/grammar_memory.h), shared by every
// tokenizer handle taken from the model and by each grammar and grammar
// state made with them, so that it outlives the model like a snapshot's
// reserve does.
//
// A tokenizer opened from a file (waste_tokenizer_open) belongs to no
// model and no plan: its slots are unbounded.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>

#include "runtime/memory_reserve.h"

namespace waste::grammar {
class VocabularyTrie;  // grammar/token_mask.h
}  // namespace waste::grammar

namespace waste::api {

struct GrammarSlots {
    // planned: waste_open_options.grammars, or UINT64_MAX outside any plan.
    explicit GrammarSlots(uint64_t planned);
    // Compiled grammars take what they hold (rules, classes, run classes)
    // from a pool of planned x max_compiled_grammar_bytes: real grammars
    // are far smaller than the bound, and a request with tools holds one per
    // function.
    runtime::MemoryReserve compiled_bytes;
    runtime::MemoryReserve states;    // grammar states alive, one a slot
    const uint64_t planned;
    // One compile at a time, so that the plan counts one compile's scratch.
    std::mutex compile_mutex;
    // The vocabulary's byte trie, built by the first compile and shared by
    // every grammar after it (each holds a reference): at K3's 163,840 ids
    // it is megabytes, and building it is most of a compile. Immutable once
    // built; one per model (the plan reserves one).
    std::once_flag trie_once;
    std::shared_ptr<const grammar::VocabularyTrie> trie;
};

}  // namespace waste::api
