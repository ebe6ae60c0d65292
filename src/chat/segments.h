// segments.h — a rendered prompt: ordered (text, markup) segments
// (k3-chat.md §2), never merged, each encoded on its own.
//
// Rule 1: content is only ever a plain segment, so it never reaches the
// markup tokenizer. Rule 2: adjacent segments are not joined either; the
// ids are the concatenation of each segment's own encoding, because that is
// the sequence K3's encoder produced (a boundary inside a pre-token piece
// changes the ids).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "text/tokenizer.h"

namespace waste::chat {

struct Segment {
    std::string text;
    bool markup = false;
};

struct RenderedPrompt {
    std::vector<Segment> segments;
    std::string text;                // the prompt as one string (a Jinja template's exact output; else the segments joined)
    std::string channel;             // "think", "response", or "" (no generation prompt / chat.json)
    bool thinking = false;
    std::vector<std::string> images;  // image references, in the order their blocks appear
};

// Appends segments; an empty text adds nothing (§2).
class SegmentWriter {
public:
    explicit SegmentWriter(std::vector<Segment>& out) : out_(out) {}
    void markup(std::string text) {
        if (!text.empty()) out_.push_back({std::move(text), true});
    }
    void plain(std::string_view text) {
        if (!text.empty()) out_.push_back({std::string(text), false});
    }

private:
    std::vector<Segment>& out_;
};

// Each segment encoded on its own (markup mode for markup segments), concatenated.
std::vector<int32_t> encode_segments(const text::Tokenizer& tokenizer, const std::vector<Segment>& segments);

}  // namespace waste::chat
