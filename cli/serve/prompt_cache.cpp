#include "prompt_cache.h"

#include <algorithm>

namespace waste_serve {

PromptCache::~PromptCache() {
    for (auto& entry : entries_) waste_snapshot_free(entry.snapshot);
}

uint32_t PromptCache::resume(waste_session* session, const std::vector<int32_t>& prompt) {
    auto best = entries_.end();
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
        const auto& t = it->tokens;
        if (t.size() <= prompt.size() && (best == entries_.end() || t.size() > best->tokens.size()) &&
            std::equal(t.begin(), t.end(), prompt.begin()))
            best = it;
    }
    waste_error error{};
    if (best != entries_.end() && waste_session_restore(session, best->snapshot, &error) == WASTE_OK) {
        entries_.splice(entries_.begin(), entries_, best);
        return static_cast<uint32_t>(entries_.front().tokens.size());
    }
    waste_session_reset(session, nullptr);
    return 0;
}

void PromptCache::remember(waste_session* session, const std::vector<int32_t>& tokens) {
    if (!enabled() || tokens.empty()) return;
    if (waste_model_snapshot_bytes(model_, static_cast<uint32_t>(tokens.size())) > capacity_) return;
    for (auto it = entries_.begin(); it != entries_.end(); ++it)
        if (it->tokens == tokens) {
            entries_.splice(entries_.begin(), entries_, it);
            return;
        }
    waste_error error{};
    waste_snapshot* snapshot = nullptr;
    for (;;) {
        if (waste_session_snapshot(session, &snapshot, &error) == WASTE_OK) break;
        // Over the reserve: drop the least recently used and try again.
        if (error.status != WASTE_ERR_BUDGET || entries_.empty()) return;
        bytes_ -= waste_snapshot_bytes(entries_.back().snapshot);
        waste_snapshot_free(entries_.back().snapshot);
        entries_.pop_back();
    }
    bytes_ += waste_snapshot_bytes(snapshot);
    entries_.push_front(Entry{tokens, snapshot});
}

}  // namespace waste_serve
