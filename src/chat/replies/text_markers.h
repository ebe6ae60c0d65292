// text_markers.h — finding markers that are ordinary text in a vocabulary
// (no single token spells them) in a stream of text pieces, incrementally.
//
// A marker may arrive split over any number of pieces, so the scanner holds
// back the stream's tail only while it is still the start of some marker,
// and lets it go as text the moment it cannot be. The earliest match wins;
// of markers matching at one place, the longest.
//
// Deliberately not here: markers that are special tokens (matched by id in
// token_reply_reader, never by text).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace waste::chat::replies {

class TextMarkerScanner {
public:
    struct Marker {
        std::string text;
        size_t index = 0;  // the format's marker number
    };
    struct Event {
        bool is_marker = false;
        size_t index = 0;  // when is_marker
        std::string text;  // when not
    };

    explicit TextMarkerScanner(std::vector<Marker> markers);
    bool active() const { return !markers_.empty(); }
    // Appends to out what text now resolves to.
    void push(std::string_view text, std::vector<Event>& out);
    // The held tail as text (the stream ended, or a special marker came).
    void flush(std::vector<Event>& out);

private:
    std::vector<Marker> markers_;
    std::string held_;
};

}  // namespace waste::chat::replies
