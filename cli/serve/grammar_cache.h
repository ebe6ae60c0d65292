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

// Keys are the grammar's text: one over this is compiled and used but not
// kept, so the cache's keys hold at most capacity x 64 KiB (a real schema
// is a few KiB; its request's body is counted in its request memory).
constexpr size_t kMaxCachedKeyBytes = 64 << 10;

class GrammarCache {
public:
    // Every compiled grammar, cached or held by a request (queued or
    // generating), takes one of the memory plan's grammar slots
    // (waste_open_options.grammars): the server plans 2 x --parallel, and
    // the cache keeps at most --parallel, so the requests generating can
    // always hold as many more.
    GrammarCache(const waste_tokenizer* tokenizer, size_t capacity) : tokenizer_(tokenizer), capacity_(capacity) {}

    // The compiled grammar for g. Throws GrammarRefused when the engine
    // refuses it, ApiError 503 when every grammar slot is held by requests
    // (cached grammars no request holds are dropped first to free theirs),
    // ApiError 500 when the engine fails otherwise.
    SharedGrammar get(const OutputGrammar& g);

    size_t size() const;

private:
    // Drops the entries no request holds; returns how many.
    size_t drop_unused();

    const waste_tokenizer* tokenizer_;
    size_t capacity_;
    mutable std::mutex mutex_;
    std::list<std::pair<std::string, SharedGrammar>> entries_;  // most recently used first
};

}  // namespace waste_serve
