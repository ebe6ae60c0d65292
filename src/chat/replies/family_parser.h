// family_parser.h — what every family's reply parser offers, and the
// description of a reply format (its markers and how to make its parser).
//
// A parser is handed structure and text already told apart by the caller
// (token_reply_reader.h): push_marker(i) for a token whose id is the
// format's i-th marker as one special token, push_text for the bytes of
// every other token. So a marker typed as ordinary tokens is text, never
// structure. Each call returns what it added; the concatenated deltas equal
// the final reasoning and content whatever the chunking; nothing malformed
// raises.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "chat/xtml_reply.h"

namespace waste::chat::replies {

class FamilyParser {
public:
    virtual ~FamilyParser() = default;
    virtual ReplyDelta push_marker(size_t marker) = 0;
    virtual ReplyDelta push_text(std::string_view text) = 0;
    // The end of output: what was held back goes out (as text, or as a call
    // with its raw arguments; each family says which). Later pushes add nothing.
    virtual ReplyDelta finish() = 0;
    virtual Json message_json() const = 0;
    virtual const std::vector<ReplyToolCall>& tool_calls() const = 0;
};

// How the family writes one tool call, for a server that holds a reply to a
// demanded call (tool_choice): the call as a sequence of parts, in order.
//   marker  a marker's text: one special token where the tokenizer has it
//           as one, else its text (a marker the format reads from text)
//   text    literal text
//   name    the tool's name
//   arguments        the arguments as one JSON object (JSON text)
//   each_argument    per property of the tool's parameters, in the schema's
//                    order, `argument`'s parts, where `key` is the
//                    property's name and `value` its value: a string bare
//                    (the template writes strings as they are), anything
//                    else as JSON text
// What the parser reads back from exactly these parts is the call.
struct CallPart {
    enum class Kind { marker, text, name, arguments, each_argument, key, value } kind;
    std::string text;               // marker, text
    std::vector<CallPart> argument;  // each_argument
};

namespace call_parts {
inline CallPart marker(std::string text) { return {CallPart::Kind::marker, std::move(text), {}}; }
inline CallPart text(std::string text) { return {CallPart::Kind::text, std::move(text), {}}; }
inline CallPart name() { return {CallPart::Kind::name, {}, {}}; }
inline CallPart arguments() { return {CallPart::Kind::arguments, {}, {}}; }
inline CallPart each_argument(std::vector<CallPart> argument) { return {CallPart::Kind::each_argument, {}, std::move(argument)}; }
inline CallPart key() { return {CallPart::Kind::key, {}, {}}; }
inline CallPart value() { return {CallPart::Kind::value, {}, {}}; }
}  // namespace call_parts

struct CallSyntax {
    std::vector<CallPart> call;  // empty: the format writes no calls
    // Reasoning the prompt left open ends at this marker (empty: the format
    // has none); while in it, think_masked may not be written (the
    // structure a call would open, another reasoning block).
    std::string think_close;
    std::vector<std::string> think_masked;
};

struct ReplyFormat {
    std::string name;
    // Marker texts, in the order push_marker numbers them. A marker counts
    // only where the tokenizer has it as one special token.
    std::vector<std::string> markers;
    // The first required_markers must be single special tokens for the
    // format to be usable with a tokenizer; the rest are optional (a
    // tokenizer without them never produces them).
    size_t required_markers = 0;
    // Markers read from text (text_markers.h) when the tokenizer has no
    // single special token for them; a marker the tokenizer does have as
    // one counts only as that id, as always.
    std::vector<size_t> text_markers;
    // Specials that are not markers: their text (XTML, §12.1) or nothing
    // (control tokens such as an end-of-turn the server stops on).
    bool specials_as_text = false;
    // channel: "think" (the reply starts inside reasoning), else "".
    std::function<std::unique_ptr<FamilyParser>(std::string_view channel)> make;
    CallSyntax call_syntax;
};

// The formats by name (reply_formats.cpp documents each); nullptr if unknown.
const ReplyFormat* find_reply_format(std::string_view name);
std::vector<std::string> reply_format_names();

// Each family's format (one file each).
ReplyFormat xtml_reply_format();
ReplyFormat content_reply_format();
ReplyFormat reasoning_reply_format();
ReplyFormat hermes_reply_format();
ReplyFormat deepseek_reply_format();
ReplyFormat kimi_k2_reply_format();
ReplyFormat glm_reply_format();
ReplyFormat harmony_reply_format();
ReplyFormat dsml_reply_format();
ReplyFormat minimax_reply_format();

}  // namespace waste::chat::replies
