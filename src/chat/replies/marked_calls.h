// marked_calls.h — the reply parser of the families whose structure is all
// special tokens: an optional reasoning pair (<think> … </think>), an
// optional section around the calls, and calls delimited by an open and a
// close token, with or without a separator between the call's head (its
// name or id) and its arguments. Qwen3/Hermes, DeepSeek-V3.1, Kimi K2, GLM
// and plain reasoning are each a MarkedCallsSpec (their own small files);
// only what is inside one call is family-specific, and it is decoded when
// the call is complete (or at its separator, for the head).
//
// Rules shared by those families:
// - "think" as the channel starts inside reasoning; a think-open token
//   anywhere outside a call opens reasoning, a think-close returns to
//   content (a stray think-close in content is dropped: it is structure).
// - Whitespace right after a think-close or a call's close is dropped
//   (the newlines the templates put between the parts), as is whitespace
//   between calls inside a section.
// - A call whose head is known at its separator is announced then and
//   stays a call: its arguments are the raw text up to its close (or the end
//   of output), JSON or not. A call without a separator is announced when
//   its body decodes at its close; a body that does not decode, or a call
//   the output ends inside, goes out as text, markers and all.
// - A marker with no role where it stands is written as its text (inside a
//   call: into the call's body, where a family may give it meaning).
// - An end token ends the message (finished); later tokens add nothing.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chat/replies/family_parser.h"
#include "chat/replies/reply_message.h"

namespace waste::chat::replies {

inline constexpr size_t no_marker = static_cast<size_t>(-1);

struct DecodedCall {
    std::string name, id, arguments;  // arguments: OpenAI's JSON string
};

struct MarkedCallsSpec {
    std::vector<std::string> markers;  // the format's marker texts (written back as text when they have no role)
    size_t think_open = no_marker, think_close = no_marker;
    size_t section_open = no_marker, section_close = no_marker;
    size_t call_open = no_marker, call_close = no_marker, call_sep = no_marker;
    std::vector<size_t> end_markers;
    // A call opens only inside a section, and a section closes only when
    // open (elsewhere those markers are text): for formats whose markers
    // are read from text (dsml, minimax).
    bool calls_in_section_only = false;
    // With a separator: the head to {name, id} (arguments empty); nullopt: not a call.
    std::function<std::optional<DecodedCall>(std::string_view head, const ReplyMessage& message)> decode_head;
    // Without one: the whole body to a call; nullopt: not a call (it is text).
    std::function<std::optional<DecodedCall>(std::string_view body, const ReplyMessage& message)> decode_body;
};

// A format read by MarkedCallsParser: configure gives the spec (its markers
// already set) the roles and decoders.
ReplyFormat marked_calls_format(std::string name, std::vector<std::string> markers, size_t required_markers,
                                std::function<void(MarkedCallsSpec&)> configure);

// The layout DeepSeek and Kimi K2 share: markers in the order section open,
// section close, call open, call close, separator, end, think open, think
// close (without separator: the same less that one, as dsml and minimax).
void sectioned_calls_roles(MarkedCallsSpec& spec, bool separator = true);

class MarkedCallsParser final : public FamilyParser {
public:
    MarkedCallsParser(MarkedCallsSpec spec, std::string_view channel);
    ReplyDelta push_marker(size_t marker) override;
    ReplyDelta push_text(std::string_view text) override;
    ReplyDelta finish() override;
    Json message_json() const override { return message_.message_json(); }
    const std::vector<ReplyToolCall>& tool_calls() const override { return message_.tool_calls(); }

private:
    struct OpenCall {
        std::string held;  // everything since the open marker, as text: what goes out if it is not a call
        std::string head, body;
        bool announced = false;  // past the separator with a good head
        bool full = false;       // held reached max_call_bytes
    };
    void stream(std::string_view text, ReplyDelta& delta);
    void add_to_call(std::string_view text, ReplyDelta& delta);
    void close_call(ReplyDelta& delta);
    void end_call(ReplyDelta& delta);  // the call ends without its close marker
    void call_as_text(std::string_view also, ReplyDelta& delta);

    MarkedCallsSpec spec_;
    ReplyMessage message_;
    std::optional<OpenCall> call_;
    bool reasoning_ = false;
    bool in_section_ = false;
    bool skip_space_ = false;
    bool ended_ = false;
};

}  // namespace waste::chat::replies
