// token_reply_reader.cpp — ids into a reply parser (see token_reply_reader.h).
#include "chat/replies/token_reply_reader.h"

#include "chat/replies/reply_formats.h"
#include "platform/error.h"
#include "text/utf8.h"

namespace waste::chat::replies {

namespace {

// Each byte that is not part of a whole UTF-8 character becomes U+FFFD
// here, before the parser sees it. Why: the C API's deltas and message are
// JSON, and replacing at dump time would replace differently in a delta
// (one piece) than in the message (the pieces joined: a character split by
// a marker would come back whole). Valid text is untouched.
std::string_view valid_text(std::string_view bytes, std::string& scratch) {
    if (text::find_invalid_utf8(bytes) == text::utf8_valid) return bytes;
    scratch.clear();
    while (!bytes.empty()) {
        const size_t bad = text::find_invalid_utf8(bytes);
        if (bad == text::utf8_valid) {
            scratch += bytes;
            break;
        }
        scratch += bytes.substr(0, bad);
        scratch += "\xEF\xBF\xBD";
        bytes.remove_prefix(bad + 1);
    }
    return scratch;
}

}  // namespace

namespace {

std::vector<TextMarkerScanner::Marker> text_markers(const ReplyFormat& format, const text::Tokenizer& tokenizer) {
    std::vector<TextMarkerScanner::Marker> out;
    for (const size_t i : format.text_markers)
        if (i < format.markers.size() && !tokenizer.special_id(format.markers[i])) out.push_back({format.markers[i], i});
    return out;
}

}  // namespace

TokenReplyReader::TokenReplyReader(std::shared_ptr<const text::Tokenizer> tokenizer, const ReplyFormat& format,
                                   std::string_view channel)
    : scanner_(text_markers(format, *tokenizer)), detokenizer_(tokenizer, format.specials_as_text) {
    if (const std::string missing = missing_marker(format, *tokenizer, true); !missing.empty())
        fail(WASTE_ERR_INVALID_ARGUMENT, "reply format \"{}\" needs \"{}\" as one special token; the tokenizer has none",
             format.name, missing);
    for (size_t i = 0; i < format.markers.size(); ++i)
        if (const auto id = tokenizer->special_id(format.markers[i])) markers_.emplace_back(*id, i);
    parser_ = format.make(channel);
}

void TokenReplyReader::push_text(std::string_view text, ReplyDelta& delta) {
    text = valid_text(text, scratch_);
    if (!scanner_.active()) {
        delta.append(parser_->push_text(text));
        return;
    }
    events_.clear();
    scanner_.push(text, events_);
    for (const auto& event : events_)
        delta.append(event.is_marker ? parser_->push_marker(event.index) : parser_->push_text(event.text));
}

void TokenReplyReader::flush_text(ReplyDelta& delta) {
    events_.clear();
    scanner_.flush(events_);
    for (const auto& event : events_) delta.append(parser_->push_text(event.text));
}

ReplyDelta TokenReplyReader::push(int32_t id) {
    ReplyDelta delta;
    for (const auto& [marker_id, marker] : markers_) {
        if (marker_id != id) continue;
        // bytes of an unfinished character before a marker belong before it
        push_text(detokenizer_.finish(), delta);
        flush_text(delta);
        delta.append(parser_->push_marker(marker));
        return delta;
    }
    push_text(detokenizer_.push(id), delta);
    return delta;
}

ReplyDelta TokenReplyReader::finish() {
    ReplyDelta delta;
    push_text(detokenizer_.finish(), delta);
    flush_text(delta);
    delta.append(parser_->finish());
    return delta;
}

}  // namespace waste::chat::replies
