// jinja_render.h — a chat request rendered through the model's own Jinja
// chat template (chat_template.jinja), with message content kept out of
// control tokens by sentinels (docs/ARCHITECTURE.md, "Content spans in a
// Jinja template").
//
// The template sees what transformers/vLLM hand it: `messages` and `tools`
// as sent (an assistant tool call's function.arguments given as a JSON
// string parsed into an object; a string that does not parse stays a
// string), add_generation_prompt, bos_token, eos_token, and the keys of the
// request's chat_template_kwargs.
//
// `text` is exactly what the template renders; the segments concatenate to
// it. Content strings are plain segments, the template's own text markup
// segments, unless the template transformed content so that the spans
// cannot be traced (then the fallback rule applies; see render_jinja).
//
// Deliberately not here: the template engine (src/template), tokenising
// (segments.h), reading the container (the C API).
#pragma once

#include <ctime>
#include <optional>
#include <string>

#include "chat/chat_request.h"
#include "chat/segments.h"
#include "template/template.h"
#include "text/tokenizer.h"

namespace waste::chat {

struct JinjaFormat {
    std::string source;  // the template's text
    tmpl::Template chat_template;
    // tokenizer_config.json's; absent ones are undefined to the template, as
    // transformers leaves them out of its special_tokens_map
    std::optional<std::string> bos_token, eos_token;
};

struct JinjaOptions {
    bool render_only_keys = false;  // honour the request's add_generation_prompt (render, never serve)
    std::optional<std::time_t> now;  // what strftime_now formats; absent: the current time
};

// Throws RequestError for a request the template cannot render (its
// raise_exception message, a template error naming the line, content that
// cannot be kept plain); the prompt's `text` is set.
RenderedPrompt render_jinja(const Json& body, const JinjaFormat& format, const text::Tokenizer& tokenizer,
                            const JinjaOptions& options);

// The single-token end-of-turn ids this template family stops at: the EOS
// and those of <|im_end|>, <|eot_id|>, <|eom_id|>, <|return|>, <|call|>,
// <|user|>, <|observation|> that the template writes.
std::vector<int32_t> jinja_stop_ids(const JinjaFormat& format, const text::Tokenizer& tokenizer);

}  // namespace waste::chat
