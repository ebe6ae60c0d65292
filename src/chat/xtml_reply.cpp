// xtml_reply.cpp — the incremental reply parser (see xtml_reply.h; k3-chat.md §12).
#include "chat/xtml_reply.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace waste::chat {

namespace {

std::string_view trim_ascii(std::string_view text) {
    const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; };
    while (!text.empty() && space(text.front())) text.remove_prefix(1);
    while (!text.empty() && space(text.back())) text.remove_suffix(1);
    return text;
}

// &quot; first, then &amp; (so "&amp;quot;" becomes "&quot;" and stops there).
std::string unescape_attribute(std::string_view value) {
    std::string once;
    for (size_t i = 0; i < value.size();) {
        if (value.compare(i, 6, "&quot;") == 0) {
            once.push_back('"');
            i += 6;
        } else {
            once.push_back(value[i++]);
        }
    }
    std::string out;
    for (size_t i = 0; i < once.size();) {
        if (once.compare(i, 5, "&amp;") == 0) {
            out.push_back('&');
            i += 5;
        } else {
            out.push_back(once[i++]);
        }
    }
    return out;
}

std::optional<int64_t> parse_integer(std::string_view text) {
    text = trim_ascii(text);
    if (!text.empty() && text.front() == '+') text.remove_prefix(1);
    int64_t value = 0;
    const auto result = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || result.ec != std::errc() || result.ptr != text.data() + text.size()) return std::nullopt;
    return value;
}

}  // namespace

std::string ReplyToolCall::arguments_text() const {
    if (has_raw) return raw;
    return arguments.dump(-1, ' ', false, Json::error_handler_t::replace);
}

void ReplyDelta::append(const ReplyDelta& later) {
    reasoning += later.reasoning;
    content += later.content;
    for (const size_t call : later.calls)
        if (std::find(calls.begin(), calls.end(), call) == calls.end()) calls.push_back(call);
}

const std::string* ParsedHeader::find(std::string_view key) const {
    for (const auto& [k, v] : attributes)
        if (k == key) return &v;
    return nullptr;
}

ParsedHeader parse_header(std::string_view text) {
    ParsedHeader header;
    const size_t space = text.find(' ');
    header.name = std::string(text.substr(0, space));
    if (space == std::string_view::npos) return header;
    std::string_view rest = text.substr(space + 1);
    while (!rest.empty()) {
        if (rest.front() == ' ') {
            rest.remove_prefix(1);
            continue;
        }
        const size_t stop = std::min(rest.find('='), rest.find(' '));
        std::string key(rest.substr(0, stop));
        if (stop == std::string_view::npos || rest[stop] == ' ') {
            // a key without a value
            header.attributes.emplace_back(std::move(key), std::string());
            rest.remove_prefix(stop == std::string_view::npos ? rest.size() : stop);
            continue;
        }
        rest.remove_prefix(stop + 1);
        std::string_view value;
        if (!rest.empty() && rest.front() == '"') {
            rest.remove_prefix(1);
            const size_t quote = rest.find('"');  // an unterminated quote takes the rest
            value = rest.substr(0, quote);
            rest.remove_prefix(quote == std::string_view::npos ? rest.size() : quote + 1);
        } else {
            const size_t end = rest.find(' ');  // an unquoted value runs to the next space
            value = rest.substr(0, end);
            rest.remove_prefix(end == std::string_view::npos ? rest.size() : end);
        }
        header.attributes.emplace_back(std::move(key), unescape_attribute(value));
    }
    return header;
}

Json typed_argument_value(std::string_view type, const std::string& text) {
    if (type == "string") return text;
    if (type == "null") return nullptr;
    if (type == "boolean") {
        std::string lower(trim_ascii(text));
        std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        if (lower == "true") return true;
        if (lower == "false") return false;
        return text;
    }
    // number, object, array, missing or unknown: JSON if it parses, else the raw text
    Json parsed;
    if (parse_json_bounded(trim_ascii(text), parsed)) return parsed;
    return text;
}

ReplyParser::ReplyParser(std::string_view channel) {
    if (!channel.empty()) stack_.emplace_back(channel);
}

void ReplyParser::route_text(std::string_view text, ReplyDelta& delta) {
    if (text.empty()) return;
    if (json_) {
        *json_ += text;
    } else if (argument_ && !argument_->key.empty()) {
        argument_->text += text;
    } else if (!stack_.empty() && stack_.back() == "think") {
        reasoning_ += text;
        delta.reasoning += text;
    } else if (!stack_.empty() && (stack_.back() == "tools" || stack_.back() == "call")) {
        // whitespace between elements: dropped
    } else {
        content_ += text;
        delta.content += text;
    }
}

void ReplyParser::file_argument(ReplyDelta& delta) {
    if (argument_ && !argument_->key.empty() && !calls_.empty()) {
        calls_.back().arguments[argument_->key] = typed_argument_value(argument_->type, argument_->text);
        delta.calls.push_back(calls_.size() - 1);
    }
    argument_.reset();
}

void ReplyParser::file_json(ReplyDelta& delta) {
    if (json_ && !calls_.empty()) {
        calls_.back().has_raw = true;
        calls_.back().raw = *json_;
        delta.calls.push_back(calls_.size() - 1);
    }
    json_.reset();
}

void ReplyParser::complete_header(ReplyDelta& delta) {
    const Header header = std::move(*header_);
    header_.reset();
    const ParsedHeader parsed = parse_header(header.text);
    if (!header.close) {
        if (parsed.name == "call" && calls_.size() < max_reply_calls) {
            ReplyToolCall call;
            if (const std::string* tool = parsed.find("tool")) call.name = *tool;
            const std::string* index = parsed.find("index");
            const auto number = index ? parse_integer(*index) : std::nullopt;
            call.index = number ? *number : static_cast<int64_t>(calls_.size()) + 1;
            const std::string* id = parsed.find("id");
            call.id = id ? *id : "call_" + std::to_string(call.index);
            calls_.push_back(std::move(call));
            delta.calls.push_back(calls_.size() - 1);
        } else if (parsed.name == "argument") {
            const std::string* key = parsed.find("key");
            const std::string* type = parsed.find("type");
            argument_ = OpenArgument{key ? *key : std::string(), type ? *type : std::string(), {}};
        } else if (parsed.name == "json") {
            json_ = std::string();
        }
        if (stack_.size() < max_reply_stack) stack_.push_back(parsed.name);
        return;
    }
    if (parsed.name == "argument") file_argument(delta);
    else if (parsed.name == "json") file_json(delta);
    if (parsed.name.empty()) {
        if (!stack_.empty()) stack_.pop_back();
        return;
    }
    const auto nearest = std::find(stack_.rbegin(), stack_.rend(), parsed.name);
    if (nearest != stack_.rend()) stack_.erase(std::prev(nearest.base()), stack_.end());
}

ReplyDelta ReplyParser::push_marker(Marker marker) {
    ReplyDelta delta;
    if (finished_ || ended_) return delta;
    switch (marker) {
        case Marker::end_of_msg: finished_ = true; break;
        case Marker::open:
        case Marker::close: header_ = Header{marker == Marker::close, {}}; break;  // an unfinished header is discarded
        case Marker::sep:
            if (header_) complete_header(delta);  // a stray <|sep|> never becomes text
            break;
    }
    return delta;
}

ReplyDelta ReplyParser::push_text(std::string_view text) {
    ReplyDelta delta;
    if (finished_ || ended_) return delta;
    if (header_) {
        header_->text += text;
        if (header_->text.size() > max_header_bytes) {
            // No header is this long: it was not markup after all.
            const std::string held = std::move(header_->text);
            header_.reset();
            route_text(held, delta);
        }
        return delta;
    }
    route_text(text, delta);
    return delta;
}

ReplyDelta ReplyParser::finish() {
    ReplyDelta delta;
    if (ended_) return delta;
    ended_ = true;
    if (header_) {
        const std::string held = std::move(header_->text);
        header_.reset();
        route_text(held, delta);
    }
    file_json(delta);
    file_argument(delta);
    return delta;
}

Json reply_message_json(const std::string& content, const std::string& reasoning, const std::vector<ReplyToolCall>& calls,
                        bool finished) {
    Json message = Json::object();
    message["role"] = "assistant";
    message["content"] = content.empty() ? Json(nullptr) : Json(content);
    if (!reasoning.empty()) message["reasoning_content"] = reasoning;
    if (!calls.empty()) {
        Json list = Json::array();
        for (const ReplyToolCall& call : calls)
            list.push_back({{"id", call.id},
                            {"type", "function"},
                            {"function", {{"name", call.name}, {"arguments", call.arguments_text()}}}});
        message["tool_calls"] = std::move(list);
    }
    message["finished"] = finished;
    return message;
}

Json ReplyParser::message_json() const { return reply_message_json(content_, reasoning_, calls_, finished_); }

}  // namespace waste::chat
