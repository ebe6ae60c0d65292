// grammar_cache.h — compiled grammars by their text, least recently used
// first out. Compiling parses and checks the grammar (a JSON Schema is
// translated first; the first compile also lays the vocabulary's 163,840
// token byte strings, for K3, into the trie every later one shares), while a
// client sending structured-output requests sends the same few schemas
// again and again. A compiled grammar is immutable and shareable
// (waste.h), so concurrent requests use one entry at once; an entry pushed
// out stays alive while a generation holds it.
#pragma once

#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

#include "response_format.h"
#include "waste/waste.h"

namespace waste_serve {

using SharedGrammar = std::shared_ptr<const waste_grammar>;

// The engine refused a grammar or schema (WASTE_ERR_INVALID_ARGUMENT); the
// message is the engine's, naming the keyword and its path. The caller knows
// which request field it came from.
struct GrammarRefused : std::runtime_error {
    using std::runtime_error::runtime_error;
};

class GrammarCache {
public:
    // Why 8: a client's handful of schemas. Every grammar compiled against
    // one tokenizer shares its vocabulary trie, but each holds its own run
    // classes (docs/GRAMMAR.md: under 3 MB at 163,840 tokens) besides its
    // rules and automata, and none of it is in the memory plan yet — so
    // the count stays small (known gap, issue 15's note).
    GrammarCache(const waste_tokenizer* tokenizer, size_t capacity = 8) : tokenizer_(tokenizer), capacity_(capacity) {}

    // The compiled grammar for g. Throws GrammarRefused when the engine
    // refuses it, ApiError (500) when the engine fails otherwise.
    SharedGrammar get(const OutputGrammar& g);

    size_t size() const;

private:
    const waste_tokenizer* tokenizer_;
    size_t capacity_;
    mutable std::mutex mutex_;
    std::list<std::pair<std::string, SharedGrammar>> entries_;  // most recently used first
};

}  // namespace waste_serve
