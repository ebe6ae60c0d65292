// invoke_calls.h — the body of an XML-style <invoke> call, as DeepSeek-V3.2
// (DSML) and MiniMax-M2 write it between their call markers:
//    name="NAME">\n<PARAM name="P"[ string="true|false"]>VALUE</PARAM>\n…
// (the call-open marker, "<｜DSML｜invoke" or "<invoke", is the parser's and
// not part of the body). Each family's file says how a value is typed.
//
// Deliberately not here: the markers around calls (marked_calls.h).
#pragma once

#include <optional>
#include <string_view>

#include "chat/replies/marked_calls.h"

namespace waste::chat::replies {

struct InvokeSyntax {
    std::string_view param_open;   // "<｜DSML｜parameter" or "<parameter"
    std::string_view param_close;  // "</｜DSML｜parameter>" or "</parameter>"
    // DSML: each parameter says string="true" (VALUE is the string) or
    // string="false" (VALUE is JSON; if it does not parse, the raw string).
    // Otherwise (MiniMax): VALUE is JSON when it parses to anything but a
    // string (the template writes strings bare and the rest with tojson),
    // else the raw string.
    bool string_attribute = false;
};

// The call, arguments as a JSON object string; nullopt (the call is text)
// when the name is missing or empty, or the body is not a sequence of
// whole parameters.
std::optional<DecodedCall> decode_invoke(std::string_view body, const InvokeSyntax& syntax, const ReplyMessage& message);

// The format both families share: markers in the order section open,
// section close, call open, call close, end, think open, think close; calls
// only inside a section, decoded at their close with syntax (whose views
// must outlive the format: literals); text_markers as the family reads them.
ReplyFormat invoke_calls_format(std::string name, std::vector<std::string> markers, size_t required_markers,
                                InvokeSyntax syntax, std::vector<size_t> text_markers);

}  // namespace waste::chat::replies
