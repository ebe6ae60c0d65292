// jinja_render.cpp — rendering a chat request through a Jinja chat
// template, content marked by sentinels (see jinja_render.h and
// docs/ARCHITECTURE.md).
#include "chat/jinja_render.h"

#include <algorithm>
#include <array>
#include <ctime>
#include <map>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

namespace waste::chat {
namespace {

// Sentinels and placeholders are code points of plane 15 (Supplementary
// Private Use Area-A, U+F0000..U+FFFFD): no tokenizer's specials, no
// template's markup and (checked per request) not the request's text.
constexpr uint32_t plane15_first = 0xF0000, plane15_last = 0xFFFFD;

std::string utf8(uint32_t cp) {
    std::string out(4, '\0');
    out[0] = static_cast<char>(0xF0 | (cp >> 18));
    out[1] = static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out[2] = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out[3] = static_cast<char>(0x80 | (cp & 0x3F));
    return out;
}

// The plane-15 code points a text holds (it need not be valid UTF-8).
void plane15_used(std::string_view text, std::set<uint32_t>& used) {
    for (size_t i = 0; i + 3 < text.size(); ++i) {
        const auto b0 = static_cast<unsigned char>(text[i]), b1 = static_cast<unsigned char>(text[i + 1]);
        if (b0 != 0xF3 || b1 < 0xB0 || b1 > 0xBF) continue;
        const auto b2 = static_cast<unsigned char>(text[i + 2]), b3 = static_cast<unsigned char>(text[i + 3]);
        used.insert((uint32_t{0x3} << 18) | (uint32_t{b1 & 0x3Fu} << 12) | (uint32_t{b2 & 0x3Fu} << 6) | (b3 & 0x3Fu));
    }
}

// Hands out plane-15 code points none of the inputs hold.
class FreshCodes {
public:
    explicit FreshCodes(std::set<uint32_t> used) : used_(std::move(used)) {}
    std::string next() {
        while (next_ <= plane15_last && used_.count(next_)) ++next_;
        if (next_ > plane15_last) throw RequestError("the request uses every private-use code point of plane 15", "messages");
        return utf8(next_++);
    }

private:
    std::set<uint32_t> used_;
    uint32_t next_ = plane15_first;
};

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

// How a content string goes into the template: wrapped in sentinels inside
// its leading and trailing ASCII whitespace (so that strip/trim/lstrip('\n')
// in a template leave the sentinels whole), or with each special token's
// text replaced by a placeholder, or as it is.
struct ContentMarker {
    enum class Mode { bare, sentinels, placeholders } mode = Mode::bare;
    std::string open, close;
    const text::Tokenizer* tokenizer = nullptr;
    // placeholder -> special text, and special text -> placeholder
    std::map<std::string, std::string> placeholder_text;
    std::unordered_map<std::string, std::string> special_placeholder;
    FreshCodes* codes = nullptr;
    bool found_special = false;  // a content string holds a special token's text

    std::string mark(const std::string& s) {
        if (mode == Mode::bare || s.empty()) return s;
        if (mode == Mode::sentinels) {
            size_t begin = 0, end = s.size();
            while (begin < end && is_space(s[begin])) ++begin;
            while (end > begin && is_space(s[end - 1])) --end;
            if (begin == end) return s;  // whitespace only: nothing a token could hide in
            return s.substr(0, begin) + open + s.substr(begin, end - begin) + close + s.substr(end);
        }
        return replace_specials(s);
    }

    std::array<std::vector<const text::SpecialToken*>, 256> by_first_byte;  // filled on first use
    bool indexed = false;

    std::string replace_specials(const std::string& s) {
        if (!indexed) {
            for (const auto& special : tokenizer->specials())
                if (!special.text.empty()) by_first_byte[static_cast<unsigned char>(special.text[0])].push_back(&special);
            indexed = true;
        }
        std::string out;
        size_t i = 0;
        while (i < s.size()) {
            const text::SpecialToken* best = nullptr;
            for (const auto* special : by_first_byte[static_cast<unsigned char>(s[i])])
                if (s.compare(i, special->text.size(), special->text) == 0 && (!best || special->text.size() > best->text.size()))
                    best = special;
            if (!best) {
                out += s[i++];
                continue;
            }
            found_special = true;
            auto it = special_placeholder.find(best->text);
            if (it == special_placeholder.end()) {
                const std::string code = codes->next();
                placeholder_text[code] = best->text;
                it = special_placeholder.emplace(best->text, code).first;
            }
            out += it->second;
            i += best->text.size();
        }
        return out;
    }
};

const Json* find_member(const Json& object, const char* key) {
    if (!object.is_object()) return nullptr;
    const auto it = object.find(key);
    return it == object.end() ? nullptr : &*it;
}

// Every string in a JSON value (object keys too) marked.
Json mark_all(const Json& value, ContentMarker& marker) {
    if (value.is_string()) return marker.mark(value.get<std::string>());
    if (value.is_array()) {
        Json out = Json::array();
        for (const Json& item : value) out.push_back(mark_all(item, marker));
        return out;
    }
    if (value.is_object()) {
        Json out = Json::object();
        for (auto it = value.begin(); it != value.end(); ++it) out[marker.mark(it.key())] = mark_all(*it, marker);
        return out;
    }
    return value;
}

// One message as the template sees it: arguments parsed, content strings marked.
// role and content part "type" stay bare: templates compare them.
Json template_message(const Json& message, size_t index, ContentMarker& marker, bool render_only) {
    if (!message.is_object())
        throw RequestError(fmt::format("messages[{}] must be an object", index), fmt::format("messages[{}]", index));
    // OpenAI's roles, as the other formats accept them; the template sees the
    // role as sent (transformers passes "developer" on too).
    const std::string role = message_role(message, index);
    // An assistant's content and reasoning are the model's own output sent
    // back, and templates act on the markup the model wrote in them (Qwen3,
    // GLM and MiniMax cut an earlier answer at '</think>'). In the
    // placeholder fallback they stay as written, so such a conversation
    // renders; their special tokens are then markup, as the model produced
    // them. Everything a user or a tool supplies, and an assistant's tool
    // calls, keep their specials as text in every mode.
    const bool model_text = role == "assistant" && marker.mode == ContentMarker::Mode::placeholders;
    Json out = Json::object();
    for (auto it = message.begin(); it != message.end(); ++it) {
        const std::string& key = it.key();
        const Json& value = *it;
        if (key == "role" || key == "type") {
            out[key] = value;
        } else if (model_text && (key == "content" || key == "reasoning_content")) {
            out[key] = value;
        } else if (key == "content" && value.is_array()) {
            Json parts = Json::array();
            for (const Json& part : value) {
                // The engine reads no image for a Jinja-template model; render shows what the template does with one.
                if (const Json* type = find_member(part, "type"); !render_only && type && type->is_string() && *type != "text")
                    throw RequestError(fmt::format("messages[{}].content: a {} part cannot be rendered by this model's chat template "
                                                   "(this engine has no vision tower for it)", index, type->get<std::string>()),
                                       fmt::format("messages[{}].content", index), "vision_disabled");
                Json copy = Json::object();
                if (part.is_object())
                    for (auto p = part.begin(); p != part.end(); ++p) copy[p.key()] = p.key() == "type" ? *p : mark_all(*p, marker);
                parts.push_back(part.is_object() ? copy : mark_all(part, marker));
            }
            out[key] = std::move(parts);
        } else if (key == "tool_calls" && value.is_array()) {
            Json calls = Json::array();
            for (const Json& call : value) {
                Json copy = Json::object();
                if (!call.is_object()) {
                    calls.push_back(mark_all(call, marker));
                    continue;
                }
                for (auto c = call.begin(); c != call.end(); ++c) {
                    if (c.key() == "type") {
                        copy[c.key()] = *c;
                    } else if (c.key() == "function" && c->is_object()) {
                        Json function = Json::object();
                        for (auto f = c->begin(); f != c->end(); ++f) {
                            if (f.key() == "arguments" && f->is_string()) {
                                Json parsed;
                                // a JSON string that parses is an object to the template, as transformers/vLLM hand it
                                if (parse_json_bounded(f->get_ref<const std::string&>(), parsed) && parsed.is_object()) {
                                    function[f.key()] = mark_all(parsed, marker);
                                    continue;
                                }
                            }
                            function[f.key()] = mark_all(*f, marker);
                        }
                        copy[c.key()] = std::move(function);
                    } else {
                        copy[c.key()] = mark_all(*c, marker);
                    }
                }
                calls.push_back(std::move(copy));
            }
            out[key] = std::move(calls);
        } else {
            out[key] = mark_all(value, marker);
        }
    }
    return out;
}

// A tool declaration: names and descriptions marked (free text a client
// may fill from anywhere); the schema's structure (types, enums, property
// names) stays bare because templates test it (gpt-oss's `type == "string"`).
Json template_tool(const Json& tool, ContentMarker& marker, bool in_schema_value = false) {
    if (tool.is_array()) {
        Json out = Json::array();
        for (const Json& item : tool) out.push_back(template_tool(item, marker));
        return out;
    }
    if (!tool.is_object()) return tool;
    Json out = Json::object();
    for (auto it = tool.begin(); it != tool.end(); ++it) {
        if ((it.key() == "description" || it.key() == "title") && it->is_string()) out[it.key()] = marker.mark(it->get<std::string>());
        else if (it.key() == "name" && it->is_string() && !in_schema_value) out[it.key()] = marker.mark(it->get<std::string>());
        else out[it.key()] = template_tool(*it, marker, it.key() == "properties");
    }
    return out;
}

Json build_context(const Json& body, const JinjaFormat& format, const JinjaOptions& options, ContentMarker& marker) {
    if (!body.is_object()) throw RequestError("the request body must be a JSON object", "");
    const Json* messages = find_member(body, "messages");
    if (!messages) throw RequestError("messages is required", "messages");
    if (!messages->is_array() || messages->empty()) throw RequestError("messages must be a non-empty array", "messages");
    if (messages->size() > max_request_messages)
        throw RequestError(fmt::format("messages has {} entries, more than {}", messages->size(), max_request_messages), "messages");
    Json context = Json::object();
    Json list = Json::array();
    for (size_t i = 0; i < messages->size(); ++i) list.push_back(template_message((*messages)[i], i, marker, options.render_only_keys));
    context["messages"] = std::move(list);
    const Json* tools = find_member(body, "tools");
    if (tools && !tools->is_null() && !tools->is_array()) throw RequestError("tools must be an array", "tools");
    context["tools"] = tools && tools->is_array() && !tools->empty() ? template_tool(*tools, marker) : Json(nullptr);
    bool add_generation_prompt = true;
    if (const Json* value = find_member(body, "add_generation_prompt"); value && options.render_only_keys) {
        if (!value->is_boolean()) throw RequestError("add_generation_prompt must be true or false", "add_generation_prompt");
        add_generation_prompt = value->get<bool>();
    }
    context["add_generation_prompt"] = add_generation_prompt;
    if (format.bos_token) context["bos_token"] = *format.bos_token;
    if (format.eos_token) context["eos_token"] = *format.eos_token;
    if (const Json* kwargs = find_member(body, "chat_template_kwargs"); kwargs && !kwargs->is_null()) {
        if (!kwargs->is_object()) throw RequestError("chat_template_kwargs must be an object", "chat_template_kwargs");
        for (auto it = kwargs->begin(); it != kwargs->end(); ++it) {
            if (it.key() == "messages" || it.key() == "tools")
                throw RequestError(fmt::format("chat_template_kwargs.{} would replace the request's own {}", it.key(), it.key()),
                                   "chat_template_kwargs." + it.key());
            context[it.key()] = *it;  // the caller's variables, bare: templates test them (enable_thinking)
        }
    }
    return context;
}

std::string render_text(const JinjaFormat& format, const Json& context, std::time_t now) {
    tmpl::RenderOptions options;
    options.now = now;
    try {
        return tmpl::render(format.chat_template, tmpl::from_json(context), options);
    } catch (const tmpl::TemplateError& e) {
        // raise_exception's own text is the client's answer; anything else names the template line
        throw RequestError(e.raised() ? e.message() : std::string(e.what()), "messages", e.raised() ? "" : "template_error");
    } catch (const Error& e) {
        throw RequestError(std::string("the chat template cannot render this request: ") + e.what(), "messages", "template_error");
    }
}

// Splits a sentinel render into segments; false when the sentinels do not
// pair up (the template cut or reordered content) or their removal does
// not give `text` byte for byte.
bool split_sentinels(const std::string& marked, const std::string& open, const std::string& close, const std::string& text,
                     std::vector<Segment>& out) {
    std::vector<Segment> segments;
    SegmentWriter writer(segments);
    std::string stripped, run;
    bool inside = false;
    size_t i = 0;
    while (i < marked.size()) {
        const bool at_open = marked.compare(i, open.size(), open) == 0, at_close = marked.compare(i, close.size(), close) == 0;
        if (at_open || at_close) {
            if (at_open == inside) return false;  // an open inside a span, or a close outside one
            if (inside) writer.plain(run);
            else writer.markup(run);
            run.clear();
            inside = at_open;
            i += open.size();
            continue;
        }
        run += marked[i];
        stripped += marked[i];
        ++i;
    }
    if (inside) return false;
    writer.markup(run);
    if (stripped != text) return false;
    out = std::move(segments);
    return true;
}

// The placeholder render: markup text between placeholders, each
// placeholder a plain segment with its special's text. False when putting
// the specials back does not give `text`.
bool split_placeholders(const std::string& marked, const ContentMarker& marker, const std::string& text, std::vector<Segment>& out) {
    std::vector<Segment> segments;
    SegmentWriter writer(segments);
    std::string restored, run;
    size_t i = 0;
    while (i < marked.size()) {
        const auto it = marked.size() - i >= 4 ? marker.placeholder_text.find(marked.substr(i, 4)) : marker.placeholder_text.end();
        if (it != marker.placeholder_text.end()) {
            writer.markup(run);
            run.clear();
            writer.plain(it->second);
            restored += it->second;
            i += 4;
            continue;
        }
        run += marked[i];
        restored += marked[i];
        ++i;
    }
    writer.markup(run);
    if (restored != text) return false;
    out = std::move(segments);
    return true;
}

// "think" when the prompt leaves the reply inside an open <think>.
std::string channel_of(const std::string& text) {
    const size_t open = text.rfind("<think>");
    if (open == std::string::npos) return "response";
    for (size_t i = open + 7; i < text.size(); ++i)
        if (!is_space(text[i])) return "response";
    return "think";
}

}  // namespace

RenderedPrompt render_jinja(const Json& body, const JinjaFormat& format, const text::Tokenizer& tokenizer, const JinjaOptions& options) {
    const std::time_t now = options.now.value_or(std::time(nullptr));  // one clock for every render of this request
    ContentMarker bare;
    RenderedPrompt prompt;
    const Json bare_context = build_context(body, format, options, bare);
    const bool bare_context_generation = bare_context["add_generation_prompt"].get<bool>();
    prompt.text = render_text(format, bare_context, now);

    std::set<uint32_t> used;
    plane15_used(body.dump(-1, ' ', false, Json::error_handler_t::replace), used);
    plane15_used(format.source, used);
    plane15_used(format.bos_token.value_or(""), used);
    plane15_used(format.eos_token.value_or(""), used);
    FreshCodes codes(std::move(used));

    // 1. Sentinels around every content string: the spans between them are content.
    ContentMarker sentinels;
    sentinels.mode = ContentMarker::Mode::sentinels;
    sentinels.open = codes.next();
    sentinels.close = codes.next();
    bool split = false;
    try {
        split = split_sentinels(render_text(format, build_context(body, format, options, sentinels), now), sentinels.open,
                                sentinels.close, prompt.text, prompt.segments);
    } catch (const RequestError&) {
        split = false;  // the template choked on marked content (e.g. a length test): the fallback decides
    }
    if (!split) {
        // 2. The template transformed content. Each special token's text in
        // content becomes a placeholder; if the render with placeholders,
        // the specials put back, is the same text, everything else is the
        // template's or harmless content with no special in it.
        ContentMarker placeholders;
        placeholders.mode = ContentMarker::Mode::placeholders;
        placeholders.tokenizer = &tokenizer;
        placeholders.codes = &codes;
        const Json context = build_context(body, format, options, placeholders);
        if (!placeholders.found_special) {
            prompt.segments = {{prompt.text, true}};
            if (prompt.text.empty()) prompt.segments.clear();
        } else {
            std::string marked;
            try {
                marked = render_text(format, context, now);
            } catch (const RequestError&) {
            }
            if (!split_placeholders(marked, placeholders, prompt.text, prompt.segments))
                // 3. Content holds special-token text and the template acts on it: refuse rather than guess.
                throw RequestError(fmt::format("message content holds the special token text \"{}\", and this chat template "
                                               "transforms that content, so it cannot be kept apart from the template's own tokens",
                                               placeholders.placeholder_text.begin()->second),
                                   "messages", "content_has_special_tokens");
        }
    }
    prompt.channel = bare_context_generation ? channel_of(prompt.text) : "";
    prompt.thinking = prompt.channel == "think";
    return prompt;
}

std::vector<int32_t> jinja_stop_ids(const JinjaFormat& format, const text::Tokenizer& tokenizer) {
    std::vector<int32_t> ids;
    auto add = [&](const std::string& text) {
        if (text.empty()) return;
        const auto ids_of = tokenizer.encode(text, true);
        const auto special = tokenizer.special_id(text);
        if (ids_of.size() == 1 && special && *special == ids_of[0] && std::find(ids.begin(), ids.end(), ids_of[0]) == ids.end())
            ids.push_back(ids_of[0]);
    };
    for (const char* end : {"<|im_end|>", "<|eot_id|>", "<|eom_id|>", "<|return|>", "<|call|>", "<|user|>", "<|observation|>"})
        if (format.source.find(end) != std::string::npos) add(end);
    add(format.eos_token.value_or(""));
    for (int32_t eos : tokenizer.eos_ids())
        if (std::find(ids.begin(), ids.end(), eos) == ids.end()) ids.push_back(eos);
    return ids;
}

}  // namespace waste::chat
