// chat_request_fuzz.cpp — libFuzzer target over chat requests and replies:
// the code under waste_chat_render_json (request validation, the XTML and
// chat.json renderers, per-segment encoding) and the reply parser.
//
// The first byte picks the path. Render paths: the rest is a request body;
// it renders or is refused with chat::RequestError (a waste::Error from the
// tokenizer is a finding only if it is not INVALID_ARGUMENT). Reply path:
// the rest is a token stream where bytes 0x01-0x04 are the four XTML
// markers and every other run of bytes a text piece; the concatenated
// deltas must equal the final reasoning and content. Any other exception,
// a crash, a leak or a sanitizer report is a finding. The tokenizer is the
// synthetic one (src/synth), built in memory: no file is needed.
// Seeds: fuzz/seeds/chat_request_fuzz/ (requests prefixed with their path byte).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "chat/chat_json_render.h"
#include "chat/chat_request.h"
#include "chat/segments.h"
#include "chat/xtml_render.h"
#include "chat/xtml_reply.h"
#include "platform/error.h"
#include "synth/synth_tokenizer.h"
#include "text/chat_template.h"
#include "text/rank_table.h"
#include "text/specials.h"
#include "text/tokenizer.h"

namespace {

struct Fixture {
    std::unique_ptr<waste::text::Tokenizer> tokenizer;
    std::unique_ptr<waste::text::ChatTemplate> chat_template;
    Fixture() {
        const auto files = waste::synth::build_tokenizer(1024, 16);
        tokenizer = std::make_unique<waste::text::Tokenizer>(waste::text::RankTable::parse(files.rank_file, "fuzz ranks"),
                                                             waste::text::parse_specials_json(files.specials_json, "fuzz specials"),
                                                             waste::text::PatternKind::kimi);
        chat_template = std::make_unique<waste::text::ChatTemplate>(waste::text::ChatTemplate::parse(files.chat_json, "fuzz chat.json"));
    }
};

void render(const Fixture& fixture, std::string_view text, uint8_t mode) {
    waste::chat::Json body;
    if (!waste::chat::parse_json_bounded(text, body)) return;
    waste::chat::RenderOptions options;
    options.thinking_default = (mode & 1) != 0;
    options.render_only_keys = (mode & 2) != 0;
    try {
        const auto request = waste::chat::read_chat_request(body, options);
        const auto prompt = (mode & 4) ? waste::chat::render_chat_json(request, *fixture.chat_template) : waste::chat::render_xtml(request);
        for (const auto& segment : prompt.segments)
            if (segment.text.empty()) __builtin_trap();  // an empty string makes no segment (§2)
        try {
            (void)waste::chat::encode_segments(*fixture.tokenizer, prompt.segments);
        } catch (const waste::Error& e) {
            if (e.status() != WASTE_ERR_INVALID_ARGUMENT) throw;
        }
    } catch (const waste::chat::RequestError&) {
        // refused with a message: the expected outcome for most inputs
    }
}

void reply(std::string_view stream, uint8_t mode) {
    static const char* channels[] = {"think", "response", ""};
    waste::chat::ReplyParser parser(channels[mode % 3]);
    std::string reasoning, content;
    auto take = [&](const waste::chat::ReplyDelta& delta) {
        reasoning += delta.reasoning;
        content += delta.content;
    };
    size_t at = 0;
    while (at < stream.size()) {
        const auto byte = static_cast<uint8_t>(stream[at]);
        if (byte >= 1 && byte <= 4) {
            take(parser.push_marker(static_cast<waste::chat::Marker>(byte - 1)));
            ++at;
            continue;
        }
        size_t end = at;
        while (end < stream.size() && !(stream[end] >= 1 && stream[end] <= 4) && end - at < 8) ++end;
        take(parser.push_text(stream.substr(at, end - at)));
        at = end;
    }
    take(parser.finish());
    if (reasoning != parser.reasoning() || content != parser.content()) __builtin_trap();
    (void)parser.message_json().dump(-1, ' ', false, waste::chat::Json::error_handler_t::replace);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const Fixture fixture;
    if (size == 0) return 0;
    const uint8_t mode = data[0];
    const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
    if (mode & 0x80) reply(rest, mode);
    else render(fixture, rest, mode);
    return 0;
}
