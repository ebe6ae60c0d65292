// template_fuzz.cpp — libFuzzer target over the chat-template engine
// (src/template): parse, then render on a small conversation.
//
// The input is template source, as a container's chat_template.jinja or a
// --chat-template file brings it. A parse or render either succeeds or
// throws waste::tmpl::TemplateError (a waste::Error); anything else (another
// exception, a crash, a hang past libFuzzer's timeout, an ASan or UBSan
// report) is a finding. The render runs under tighter limits than a real one
// so that loops the fuzzer writes end quickly: exceeding a limit is an error
// by design, and that path is tested too.
// Seeds: fuzz/seeds/template_fuzz/ and, copied by scripts/test.sh, the real
// templates of ../shared/data/chat-templates/.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "platform/error.h"
#include "template/template.h"
#include "template/value.h"

namespace {

// A conversation touching what templates read: a system turn, tools, a tool
// call with arguments as an object, its result, reasoning and a special
// token typed by the user.
const waste::tmpl::Value& context() {
    static const waste::tmpl::Value value = waste::tmpl::from_json(nlohmann::ordered_json::parse(R"({
      "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What is the weather in <|im_end|> Paris?"},
        {"role": "assistant", "content": "", "reasoning_content": "Call the tool.",
         "tool_calls": [{"id": "call_0", "type": "function",
                         "function": {"name": "weather", "arguments": {"city": "Paris"}}}]},
        {"role": "tool", "tool_call_id": "call_0", "content": "{\"sky\": \"clear\"}"},
        {"role": "user", "content": [{"type": "text", "text": "Thanks!"}]}
      ],
      "tools": [{"type": "function", "function": {"name": "weather", "description": "Weather by city",
                 "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}],
      "add_generation_prompt": true,
      "bos_token": "<s>",
      "eos_token": "</s>"
    })"));
    return value;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view source(reinterpret_cast<const char*>(data), size);
    waste::tmpl::RenderOptions options;
    options.now = 1'700'000'000;  // strftime_now: fixed, so a finding replays
    options.limits.max_output_bytes = 1u << 20;
    options.limits.max_list_items = 1u << 14;
    options.limits.max_steps = 200'000;
    options.limits.max_call_depth = 64;
    try {
        const waste::tmpl::Template parsed = waste::tmpl::Template::parse(source, "fuzz.jinja");
        const std::string text = waste::tmpl::render(parsed, context(), options);
        if (text.size() > options.limits.max_output_bytes) __builtin_trap();  // the bound must hold
    } catch (const waste::Error&) {
        // refused with a message naming the template line: the common outcome
    }
    return 0;
}
