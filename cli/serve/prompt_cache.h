// prompt_cache.h — prompt reuse: the engine state at the end of recent
// prompts and of their replies (prompt + the generated tokens evaluated),
// kept as session snapshots (bounded by the plan's snapshot reserve, least
// recently used first out). A request whose prompt extends a stored one
// restores it and prefills only the new tokens; the snapshot restores the
// exact state, so the answer is the one a fresh prefill gives (within the
// chunked-prefill rounding waste.h documents).
// Callers hold the engine's turn lock around every call.
#pragma once

#include <cstdint>
#include <list>
#include <vector>

#include "waste/waste.h"

namespace waste_serve {

class PromptCache {
public:
    PromptCache(const waste_model* model, uint64_t capacity_bytes) : model_(model), capacity_(capacity_bytes) {}
    ~PromptCache();
    PromptCache(const PromptCache&) = delete;
    PromptCache& operator=(const PromptCache&) = delete;

    // Restores into session the longest stored prompt that is a prefix of
    // prompt (the whole prompt too: a snapshot carries its next-token
    // logits). Returns its length (0: none; the session is then reset).
    uint32_t resume(waste_session* session, const std::vector<int32_t>& prompt);
    // Stores the state of session, which holds exactly tokens (a prompt, or
    // a prompt and its reply), evicting the least recently used to make
    // room. A state larger than the whole capacity is not stored (and
    // evicts nothing).
    void remember(waste_session* session, const std::vector<int32_t>& tokens);
    bool enabled() const { return capacity_ > 0; }
    uint64_t bytes() const { return bytes_; }
    size_t entries() const { return entries_.size(); }

private:
    struct Entry {
        std::vector<int32_t> tokens;
        waste_snapshot* snapshot;
    };
    std::list<Entry> entries_;  // most recently used first
    const waste_model* model_;
    uint64_t capacity_;
    uint64_t bytes_ = 0;
};

}  // namespace waste_serve
