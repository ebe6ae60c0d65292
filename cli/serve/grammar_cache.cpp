#include "grammar_cache.h"

#include "api_error.h"

namespace waste_serve {

SharedGrammar GrammarCache::get(const OutputGrammar& g) {
    std::string key = std::to_string(g.kind) + ':' + g.text;
    {
        std::lock_guard lock(mutex_);
        for (auto it = entries_.begin(); it != entries_.end(); ++it)
            if (it->first == key) {
                entries_.splice(entries_.begin(), entries_, it);
                return it->second;
            }
    }
    // Compiled outside the lock: a slow compile does not hold up requests
    // whose grammar is cached. Two requests racing on one new schema both
    // compile it; the second insert finds the first and uses it.
    waste_grammar* compiled = nullptr;
    waste_error error{};
    waste_status status = waste_grammar_compile(tokenizer_, g.kind, g.text.data(), g.text.size(), &compiled, &error);
    if (status == WASTE_ERR_BUDGET && drop_unused() > 0)
        status = waste_grammar_compile(tokenizer_, g.kind, g.text.data(), g.text.size(), &compiled, &error);
    if (status == WASTE_ERR_BUDGET)
        throw ApiError{503, "every grammar slot the memory plan reserves is held by a request; retry shortly (" +
                                std::string(error.message) + ")",
                       "unavailable_error", "", "grammar_slots_full"};
    if (status == WASTE_ERR_INVALID_ARGUMENT) throw GrammarRefused(error.message);
    if (status != WASTE_OK)
        throw ApiError{500, std::string("cannot compile the response_format grammar: ") + error.message, "engine_error", "", "engine_error"};
    SharedGrammar grammar(compiled, [](const waste_grammar* p) { waste_grammar_free(const_cast<waste_grammar*>(p)); });

    if (key.size() > kMaxCachedKeyBytes) return grammar;  // used, not kept
    std::lock_guard lock(mutex_);
    for (auto it = entries_.begin(); it != entries_.end(); ++it)
        if (it->first == key) {
            entries_.splice(entries_.begin(), entries_, it);
            return it->second;
        }
    entries_.emplace_front(std::move(key), grammar);
    while (entries_.size() > capacity_) entries_.pop_back();
    return grammar;
}

size_t GrammarCache::drop_unused() {
    std::lock_guard lock(mutex_);
    const size_t before = entries_.size();
    entries_.remove_if([](const auto& entry) { return entry.second.use_count() == 1; });
    return before - entries_.size();
}

size_t GrammarCache::size() const {
    std::lock_guard lock(mutex_);
    return entries_.size();
}

}  // namespace waste_serve
