// xtml_reply.h — reading K3's reply back (k3-chat.md §12): reasoning,
// content and tool calls, incrementally, from a stream of tokens each
// already classified as one of the four XTML markers or as text.
//
// Structure is decided by the caller's classification (by token id: a
// marker spelled with ordinary text tokens is text, §12.1), so this class
// takes (marker) or (text) and never scans text for markers. Each call
// returns what it added; the concatenated deltas equal the final values
// whatever the chunking. Nothing malformed raises: unterminated elements,
// stray markers and mangled headers end as text or are dropped (§12.5).
//
// Deliberately not here: mapping ids to markers and bytes (the C API's
// reply parser, with the model's tokenizer and a streaming detokenizer),
// stop strings and finish_reason (the server's).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chat/xtml_json.h"

namespace waste::chat {

enum class Marker { open, close, sep, end_of_msg };

struct ReplyToolCall {
    std::string id;
    std::string name;
    int64_t index = 0;          // the call's index attribute (1-based), or its position + 1
    Json arguments = Json::object();  // key -> typed value, in filing order
    bool has_raw = false;       // a json block was filed: arguments go out verbatim
    std::string raw;
    // The "arguments" string of OpenAI's tool call: the raw block, or the map's JSON text.
    std::string arguments_text() const;
};

struct ReplyDelta {
    std::string reasoning;
    std::string content;
    std::vector<size_t> calls;  // positions (0-based) of the calls opened or touched
    bool empty() const { return reasoning.empty() && content.empty() && calls.empty(); }
    void append(const ReplyDelta& later);
};

class ReplyParser {
public:
    // channel: the element the generation prompt left open ("think",
    // "response"), or "" for a raw prompt.
    explicit ReplyParser(std::string_view channel);

    ReplyDelta push_marker(Marker marker);
    ReplyDelta push_text(std::string_view text);
    // The end of output (§12.5): a pending header becomes text, an open
    // argument or json block is filed. Later pushes add nothing.
    ReplyDelta finish();

    const std::string& reasoning() const { return reasoning_; }
    const std::string& content() const { return content_; }
    const std::vector<ReplyToolCall>& tool_calls() const { return calls_; }
    bool finished() const { return finished_; }  // <|end_of_msg|> was seen

    // §12.6: {"role": "assistant", "content": text or null,
    // "reasoning_content"?, "tool_calls"?, "finished"}.
    Json message_json() const;

private:
    struct Header {
        bool close = false;
        std::string text;
    };
    struct OpenArgument {
        std::string key, type, text;
    };

    void route_text(std::string_view text, ReplyDelta& delta);
    void complete_header(ReplyDelta& delta);
    void file_argument(ReplyDelta& delta);
    void file_json(ReplyDelta& delta);

    std::string reasoning_, content_;
    std::vector<ReplyToolCall> calls_;
    std::vector<std::string> stack_;
    std::optional<Header> header_;
    std::optional<OpenArgument> argument_;
    std::optional<std::string> json_;
    bool finished_ = false;
    bool ended_ = false;
};

// §12.6's message from its parts (every family's reply parser writes this shape).
Json reply_message_json(const std::string& content, const std::string& reasoning, const std::vector<ReplyToolCall>& calls,
                        bool finished);

// A header's text ("call tool=\"f\" index=\"1\"") split into its name and
// unescaped attributes (§12.4); never fails.
struct ParsedHeader {
    std::string name;
    std::vector<std::pair<std::string, std::string>> attributes;
    const std::string* find(std::string_view key) const;
};
ParsedHeader parse_header(std::string_view text);

// §12.4's table: the declared type is the model's claim, not a contract.
Json typed_argument_value(std::string_view type, const std::string& text);

// Why: a reply is bounded by the context length; these keep a hostile
// stream of markers from growing the state without bound anyway.
inline constexpr size_t max_reply_stack = 256;
inline constexpr size_t max_reply_calls = 4096;
inline constexpr size_t max_header_bytes = 64 * 1024;

}  // namespace waste::chat
