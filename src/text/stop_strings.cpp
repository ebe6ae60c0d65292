#include "text/stop_strings.h"

#include <algorithm>

#include "platform/error.h"

namespace waste::text {

StopStringMatcher::StopStringMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {
    for (size_t i = 0; i < stops_.size(); ++i)
        if (stops_[i].empty()) fail(WASTE_ERR_INVALID_ARGUMENT, "stop string {} is empty", i);
}

std::string_view StopStringMatcher::push(std::string_view bytes) {
    ready_.clear();
    if (stopped()) return ready_;
    std::string pending = held_;
    pending.append(bytes);
    held_.clear();
    // The held tail holds no whole stop string (it would have matched), so
    // the first one complete in pending is the first in the stream.
    size_t best_start = std::string::npos, best_end = std::string::npos;
    for (size_t i = 0; i < stops_.size(); ++i) {
        const size_t at = pending.find(stops_[i]);
        if (at == std::string::npos) continue;
        const size_t end = at + stops_[i].size();
        if (end < best_end || (end == best_end && at < best_start)) {
            best_start = at;
            best_end = end;
            matched_ = static_cast<int>(i);
        }
    }
    if (stopped()) {
        ready_.assign(pending, 0, best_start);
        return ready_;
    }
    // Hold back the longest tail that some stop string begins with.
    size_t longest = 0;
    for (const std::string& stop : stops_) {
        const size_t limit = std::min(pending.size(), stop.size() - 1);
        for (size_t k = limit; k > longest; --k)
            if (std::string_view(pending).substr(pending.size() - k) == std::string_view(stop).substr(0, k)) {
                longest = k;
                break;
            }
    }
    ready_.assign(pending, 0, pending.size() - longest);
    held_.assign(pending, pending.size() - longest, longest);
    return ready_;
}

std::string_view StopStringMatcher::finish() {
    ready_.clear();
    if (!stopped()) ready_.swap(held_);
    held_.clear();
    return ready_;
}

}  // namespace waste::text
