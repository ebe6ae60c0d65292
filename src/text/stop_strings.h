// stop_strings.h — finds stop strings in streamed text, which may span
// tokens, and decides which bytes are safe to show.
//
// Text arrives in pieces (one token's bytes at a time). push() returns the
// bytes that can no longer be part of a stop string and holds back only the
// longest tail that is still the beginning of one. When a stop string is
// complete, push() returns the text before it and the matcher is stopped; the
// stop string itself and whatever followed are never returned. Several stop
// strings at once: the one that is complete first wins (it ends earliest; at
// the same end, the one that starts earliest, so the least text is shown).
//
// Works on bytes: a stop string is matched wherever its bytes occur.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace waste::text {

class StopStringMatcher {
public:
    // Empty stop strings are refused (they would match before any text).
    explicit StopStringMatcher(std::vector<std::string> stops);

    // The bytes now safe to emit; valid until the next call. Nothing once stopped.
    std::string_view push(std::string_view bytes);
    // The end of the stream: the held tail was not a stop string after all.
    std::string_view finish();
    bool stopped() const { return matched_ >= 0; }
    int matched() const { return matched_; }  // index of the stop string found, -1 if none
    size_t held_bytes() const { return held_.size(); }

private:
    std::vector<std::string> stops_;
    std::string held_;
    std::string ready_;
    int matched_ = -1;
};

}  // namespace waste::text
