#include "sse.h"

#include <chrono>
#include <random>

#include <fmt/format.h>

#include "api_error.h"

namespace waste_serve {

using nlohmann::json;

std::string new_id(const char* prefix) {
    thread_local std::mt19937_64 random{std::random_device{}()};
    return fmt::format("{}{:012x}{:012x}", prefix, random() & 0xffffffffffffULL, random() & 0xffffffffffffULL);
}

int64_t unix_now() {
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string sse_event(const json& chunk) { return "data: " + dump(chunk) + "\n\n"; }

namespace {

json bytes_of(const std::string& text) {
    json bytes = json::array();
    for (unsigned char c : text) bytes.push_back(c);
    return bytes;
}

json logprob_entry(const Engine& engine, const TokenChoice& choice) {
    const std::string text = token_text(engine, choice.token);
    json top = json::array();
    for (const auto& [token, logprob] : choice.top) {
        const std::string t = token_text(engine, token);
        top.push_back({{"token", t}, {"logprob", logprob}, {"bytes", bytes_of(t)}});
    }
    return {{"token", text}, {"logprob", choice.logprob}, {"bytes", bytes_of(text)}, {"top_logprobs", top}};
}

}  // namespace

json chat_logprobs(const Engine& engine, const std::vector<TokenChoice>& choices) {
    json content = json::array();
    for (const auto& choice : choices) content.push_back(logprob_entry(engine, choice));
    return {{"content", content}};
}

json completion_logprobs(const Engine& engine, const std::vector<TokenChoice>& choices) {
    json tokens = json::array(), token_logprobs = json::array(), top = json::array(), offsets = json::array();
    size_t offset = 0;
    for (const auto& choice : choices) {
        const std::string text = token_text(engine, choice.token);
        tokens.push_back(text);
        token_logprobs.push_back(choice.logprob);
        json alternatives = json::object();
        for (const auto& [token, logprob] : choice.top) alternatives[token_text(engine, token)] = logprob;
        top.push_back(alternatives);
        offsets.push_back(offset);
        offset += text.size();
    }
    return {{"tokens", tokens}, {"token_logprobs", token_logprobs}, {"top_logprobs", top}, {"text_offset", offsets}};
}

json ChatStream::chunk(json delta, const json& finish_reason) const {
    return {{"id", id_},
            {"object", "chat.completion.chunk"},
            {"created", created_},
            {"model", model_},
            {"choices", json::array({{{"index", 0}, {"delta", std::move(delta)}, {"logprobs", nullptr}, {"finish_reason", finish_reason}}})}};
}

std::string ChatStream::first() const { return sse_event(chunk({{"role", "assistant"}, {"content", ""}})); }

std::string ChatStream::step(const Engine& engine, const StepOutput& step, bool logprobs) {
    std::string out;
    // A tool call is announced as soon as its name is known.
    for (const auto& call : step.delta.tool_calls) {
        const std::string key = call.contains("index") ? dump(call["index"]) : std::to_string(announced_.size());
        const std::string name = call.value("name", "");
        if (name.empty() || std::find(announced_.begin(), announced_.end(), key) != announced_.end()) continue;
        announced_.push_back(key);
        json head = {{"index", announced_.size() - 1},
                     {"id", call.value("id", "")},
                     {"type", "function"},
                     {"function", {{"name", name}, {"arguments", ""}}}};
        out += sse_event(chunk({{"tool_calls", json::array({head})}}));
    }
    json delta = json::object();
    if (!step.delta.reasoning.empty()) delta["reasoning_content"] = step.delta.reasoning;
    if (!step.delta.content.empty()) delta["content"] = step.delta.content;
    const bool with_logprobs = logprobs && step.choice;
    if (delta.empty() && !with_logprobs) return out;
    json c = chunk(delta);
    if (with_logprobs) c["choices"][0]["logprobs"] = chat_logprobs(engine, {*step.choice});
    out += sse_event(c);
    return out;
}

std::string ChatStream::end(const Engine& engine, const Outcome& outcome, bool include_usage) const {
    std::string out;
    if (auto calls = outcome.message.find("tool_calls"); calls != outcome.message.end()) {
        for (size_t i = 0; i < calls->size(); ++i) {
            const json& call = (*calls)[i];
            json part = {{"index", i}, {"function", {{"arguments", call["function"].value("arguments", "")}}}};
            if (i >= announced_.size()) {  // never announced (its name came only at the end)
                part["id"] = call.value("id", "");
                part["type"] = "function";
                part["function"]["name"] = call["function"].value("name", "");
            }
            out += sse_event(chunk({{"tool_calls", json::array({part})}}));
        }
    }
    out += sse_event(chunk(json::object(), outcome.finish_reason));
    json tail = {{"id", id_}, {"object", "chat.completion.chunk"}, {"created", created_}, {"model", model_}, {"choices", json::array()}};
    if (include_usage) {
        json usage = tail;
        usage["usage"] = usage_json(outcome);
        out += sse_event(usage);
    }
    tail["waste"] = waste_json(engine, outcome);
    out += sse_event(tail);
    out += kSseDone;
    return out;
}

}  // namespace waste_serve
