// template.h — the chat-template engine's public face: parse a Jinja2
// template once, render it many times on a context of values, byte for byte
// as Python's Jinja2 3.1 renders it under Hugging Face transformers'
// settings (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks,
// loopcontrols; globals raise_exception, strftime_now, range, namespace;
// transformers' tojson). docs/ARCHITECTURE.md lists the supported subset.
//
// Errors: a malformed or unsupported template is a TemplateError naming the
// template and line at parse time (or at run time where Jinja2 too defers
// it, e.g. an unknown filter inside an if); a template's raise_exception(msg)
// is a TemplateError with raised() true and message() exactly msg; anything
// Jinja2 would fail on (undefined attribute of undefined, str + int, a
// sandboxed list.append) is a TemplateError too. Sizes, steps and call depth
// are bounded (RenderLimits); exceeding one is an error, never a hang.
//
// Deliberately not here: building the context from a chat request, marking
// content spans, tokenising (issue 17's other parts).
#pragma once

#include <cstdint>
#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "platform/error.h"
#include "template/value.h"

namespace waste::tmpl {

struct ParsedTemplate;

struct RenderLimits {
    size_t max_output_bytes = 16u << 20;  // the rendered prompt, and any one string built on the way
    size_t max_list_items = 1u << 20;     // a list built by + or * or a filter
    uint64_t max_steps = 20'000'000;      // statements, loop iterations and calls: bounds time
    int max_call_depth = 200;             // nested macro calls (Jinja2 would hit Python's recursion limit)
};

struct RenderOptions {
    // What strftime_now formats (UTC); absent means the current time.
    std::optional<std::time_t> now;
    RenderLimits limits;
};

class TemplateError : public Error {
public:
    TemplateError(waste_status status, std::string full_message, std::string message, bool raised)
        : Error(status, std::move(full_message)), message_(std::move(message)), raised_(raised) {}
    // The template's own raise_exception text when raised(), else the cause.
    const std::string& message() const { return message_; }
    bool raised() const { return raised_; }

private:
    std::string message_;
    bool raised_;
};

class Template {
public:
    // Throws TemplateError naming `name` and the line of the first problem.
    static Template parse(std::string_view source, std::string name);
    const ParsedTemplate& parsed() const { return *parsed_; }
    const std::string& name() const;

private:
    std::shared_ptr<const ParsedTemplate> parsed_;
};

// `context` is a dict of template variables (messages, tools,
// add_generation_prompt, bos_token ...); it is copied, never changed.
std::string render(const Template& template_, const Value& context, const RenderOptions& options = {});

}  // namespace waste::tmpl
