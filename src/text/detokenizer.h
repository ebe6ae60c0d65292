// detokenizer.h — streaming detokenization: ids arrive one at a time (as a
// model generates them) and text goes out as soon as it is whole.
//
// A character can be split across tokens (byte-level BPE: an emoji is often
// two or three tokens). push() returns the bytes that are ready and holds
// back a trailing incomplete UTF-8 sequence (at most 3 bytes) until the next
// token completes it. Bytes that can never become valid UTF-8 are passed on
// at once, not held. The concatenation of every push() and the final
// finish() is exactly Tokenizer::decode of the same ids, byte for byte.
//
// Deliberately not here: replacing invalid bytes (a caller that displays
// text decides that).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "text/tokenizer.h"

namespace waste::text {

class StreamDetokenizer {
public:
    StreamDetokenizer(std::shared_ptr<const Tokenizer> tokenizer, bool markup);

    // The bytes now complete; valid until the next call. Throws for an id the
    // vocabulary lacks (and then holds what it held before).
    std::string_view push(int32_t id);
    // Whatever is still held (an incomplete sequence at the end of the
    // stream), after which the stream starts afresh.
    std::string_view finish();
    size_t held_bytes() const { return held_.size(); }

private:
    std::shared_ptr<const Tokenizer> tokenizer_;
    bool markup_;
    std::string held_;
    std::string ready_;
};

}  // namespace waste::text
