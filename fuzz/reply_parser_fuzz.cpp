// reply_parser_fuzz.cpp — libFuzzer target over the families' reply parsers
// (src/chat/replies): XTML, harmony, DeepSeek, Kimi K2, GLM, Hermes,
// reasoning-only, content, DSML (DeepSeek-V3.2) and MiniMax-M2.
//
// The first byte picks the format (low bits, in reply_format_names()
// order) and the channel (bit 7: "think"). The rest is the parser's event
// stream: a byte 0x01-0x0F is the format's marker (byte - 1) where it has
// one, and every other run of up to 8 bytes a text piece. The concatenated
// deltas must equal the final reasoning and content, and every call a delta
// names must exist. Any exception, crash, leak or sanitizer report is a
// finding. No tokenizer is needed: ids to events is token_reply_reader's,
// covered by tests/reply_formats_test.cpp.
// Seeds: fuzz/seeds/reply_parser_fuzz/.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "chat/replies/family_parser.h"

namespace {

bool is_marker(uint8_t byte, size_t markers) { return byte >= 1 && byte <= 15 && byte - 1u < markers; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace waste::chat;
    if (size == 0) return 0;
    static const auto names = replies::reply_format_names();
    const replies::ReplyFormat* format = replies::find_reply_format(names[(data[0] & 0x7F) % names.size()]);
    auto parser = format->make((data[0] & 0x80) ? "think" : "");
    const std::string_view stream(reinterpret_cast<const char*>(data) + 1, size - 1);
    std::string reasoning, content;
    auto take = [&](const ReplyDelta& delta) {
        reasoning += delta.reasoning;
        content += delta.content;
        for (const size_t call : delta.calls)
            if (call >= parser->tool_calls().size()) __builtin_trap();
    };
    const size_t markers = format->markers.size();
    size_t at = 0;
    while (at < stream.size()) {
        const auto byte = static_cast<uint8_t>(stream[at]);
        if (is_marker(byte, markers)) {
            take(parser->push_marker(byte - 1u));
            ++at;
            continue;
        }
        size_t end = at;
        while (end < stream.size() && !is_marker(static_cast<uint8_t>(stream[end]), markers) && end - at < 8) ++end;
        take(parser->push_text(stream.substr(at, end - at)));
        at = end;
    }
    take(parser->finish());
    const Json message = parser->message_json();
    const std::string final_content = message["content"].is_string() ? message["content"].get<std::string>() : "";
    const std::string final_reasoning = message.contains("reasoning_content") ? message["reasoning_content"].get<std::string>() : "";
    if (reasoning != final_reasoning || content != final_content) __builtin_trap();
    (void)message.dump(-1, ' ', false, Json::error_handler_t::replace);
    return 0;
}
