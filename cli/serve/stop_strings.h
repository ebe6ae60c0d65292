// stop_strings.h — stop strings over the streamed content (k3-chat.md
// §12.6): content is cut at the first match, and while streaming the
// suffix that could still grow into a stop string is held back, so a stop
// string is never emitted.
#pragma once

#include <string>
#include <vector>

namespace waste_serve {

class StopStrings {
public:
    explicit StopStrings(std::vector<std::string> stops) : stops_(std::move(stops)) {}

    // Adds content; returns what may be sent now. After a match, matched()
    // is true and everything later is dropped.
    std::string push(const std::string& content);
    // The end of output: what was held back.
    std::string finish();
    bool matched() const { return matched_; }
    // All content sent (or to send): the final message's content.
    const std::string& content() const { return sent_; }

private:
    std::vector<std::string> stops_;
    std::string held_;  // received, not yet sent
    std::string sent_;
    bool matched_ = false;
};

}  // namespace waste_serve
