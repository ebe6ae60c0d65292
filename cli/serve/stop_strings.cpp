#include "stop_strings.h"

#include <algorithm>
#include <utility>

namespace waste_serve {

std::string StopStrings::push(const std::string& content) {
    if (matched_) return {};
    held_ += content;
    if (stops_.empty()) {
        sent_ += held_;
        return std::exchange(held_, {});
    }
    // A match may span earlier held text, never text already sent (held_
    // keeps every suffix that could begin one).
    size_t first = std::string::npos;
    for (const auto& stop : stops_) first = std::min(first, held_.find(stop));
    if (first != std::string::npos) {
        matched_ = true;
        std::string out = held_.substr(0, first);
        held_.clear();
        sent_ += out;
        return out;
    }
    // Hold back the longest suffix that is a proper prefix of a stop string.
    size_t keep = 0;
    for (const auto& stop : stops_)
        for (size_t n = std::min(stop.size() - 1, held_.size()); n > keep; --n)
            if (held_.compare(held_.size() - n, n, stop, 0, n) == 0) {
                keep = n;
                break;
            }
    std::string out = held_.substr(0, held_.size() - keep);
    held_.erase(0, held_.size() - keep);
    sent_ += out;
    return out;
}

std::string StopStrings::finish() {
    if (matched_) return {};
    sent_ += held_;
    return std::exchange(held_, {});
}

}  // namespace waste_serve
