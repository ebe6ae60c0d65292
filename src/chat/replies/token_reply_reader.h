// token_reply_reader.h — generated token ids into a family's reply parser:
// a token whose id is one of the format's markers (as one special token)
// is structure; every other token is text, through the streaming
// detokenizer (an incomplete UTF-8 character held until complete, and
// flushed before a marker, whose bytes come before it; a byte that is
// not part of a whole character becomes U+FFFD). Specials that are
// not markers are text or nothing as the format says. A format's text
// markers the tokenizer has no single token for are found in the text.
//
// Deliberately not here: choosing the format (reply_formats.h), the C API's
// JSON deltas (src/api).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chat/replies/family_parser.h"
#include "chat/replies/text_markers.h"
#include "text/detokenizer.h"
#include "text/tokenizer.h"

namespace waste::chat::replies {

class TokenReplyReader {
public:
    // Fails (WASTE_ERR_INVALID_ARGUMENT) when the tokenizer lacks one of the
    // format's required markers as a single special token, naming both.
    TokenReplyReader(std::shared_ptr<const text::Tokenizer> tokenizer, const ReplyFormat& format, std::string_view channel);

    // Throws WASTE_ERR_INVALID_ARGUMENT for an id outside the vocabulary.
    ReplyDelta push(int32_t id);
    ReplyDelta finish();
    const FamilyParser& parser() const { return *parser_; }

private:
    void push_text(std::string_view text, ReplyDelta& delta);
    void flush_text(ReplyDelta& delta);  // the scanner's held tail, before a special marker or the end

    std::vector<std::pair<int32_t, size_t>> markers_;  // id -> marker index
    std::unique_ptr<FamilyParser> parser_;
    TextMarkerScanner scanner_;  // the format's text markers the tokenizer lacks as tokens
    std::vector<TextMarkerScanner::Event> events_;
    text::StreamDetokenizer detokenizer_;
    std::string scratch_;
};

}  // namespace waste::chat::replies
