// segments.cpp — encoding a rendered prompt segment by segment (see segments.h).
#include "chat/segments.h"

namespace waste::chat {

std::vector<int32_t> encode_segments(const text::Tokenizer& tokenizer, const std::vector<Segment>& segments) {
    std::vector<int32_t> ids;
    for (const Segment& segment : segments) tokenizer.encode(segment.text, segment.markup, ids);
    return ids;
}

}  // namespace waste::chat
