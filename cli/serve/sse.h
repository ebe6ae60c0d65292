// sse.h — OpenAI's response objects: chat completions (blocking and as
// Server-Sent Events chunks, k3-chat.md §13.14-17) and text completions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine.h"

namespace waste_serve {

std::string new_id(const char* prefix);  // "chatcmpl-" + 24 hex digits
int64_t unix_now();

// One "data: {...}\n\n" event.
std::string sse_event(const nlohmann::json& chunk);
constexpr const char* kSseDone = "data: [DONE]\n\n";

// choice.logprobs of a chat completion: {"content": [{token, logprob, bytes, top_logprobs}]}.
nlohmann::json chat_logprobs(const Engine& engine, const std::vector<TokenChoice>& choices);
// choice.logprobs of a text completion: {tokens, token_logprobs, top_logprobs, text_offset}.
nlohmann::json completion_logprobs(const Engine& engine, const std::vector<TokenChoice>& choices);

// Builds the chunks of one streamed chat completion in §13.17's order.
class ChatStream {
public:
    ChatStream(std::string id, int64_t created, std::string model) : id_(std::move(id)), created_(created), model_(std::move(model)) {}
    std::string first() const;                                            // role, empty content
    // The chunks one step adds (none when it added nothing and logprobs are off).
    std::string step(const Engine& engine, const StepOutput& step, bool logprobs);
    // Arguments per call, the finish chunk, usage (when asked), waste, [DONE].
    std::string end(const Engine& engine, const Outcome& outcome, bool include_usage) const;

private:
    nlohmann::json chunk(nlohmann::json delta, const nlohmann::json& finish_reason = nullptr) const;
    std::string id_;
    int64_t created_;
    std::string model_;
    std::vector<std::string> announced_;  // the parser's call keys, in the order announced
};

}  // namespace waste_serve
