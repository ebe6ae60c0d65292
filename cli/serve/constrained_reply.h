// constrained_reply.h — holds one chat reply's answer to a grammar
// (response_format, docs/SERVE.md "Structured output"). It is the one place
// that knows where in a reply the grammar applies, so the generation loop
// only asks it, per token, "sample from these masked logits, or emit this
// token, or stop here" and tells it the token taken.
//
// Where the grammar applies:
// - chat.json containers (no XTML): the whole reply is content, so every
//   token is masked by the grammar, and the end tokens (EOS, the assistant
//   suffix) are allowed only where the grammar may end.
// - XTML (K3, k3-chat.md §11–12), thinking off: the prompt left `response`
//   open, so the same from the first token, with `<|close|>` (the close of
//   `response`) an end token too.
// - XTML, thinking on: the think channel is free text, but its structure is
//   ours: `<|open|>` and the end tokens are masked there (a constrained reply
//   must reach its answer), and when the model writes `<|close|>` the rest of
//   `think<|sep|><|open|>response<|sep|>` is forced (evaluated as generated
//   tokens, not sampled): it is the only continuation that leads to an
//   answer, and letting the model write the header's text freely would let
//   it open anything else. From then on, as with thinking off.
// The reply ends when the model takes an end token where the grammar allowed
// it, or at once when the grammar allows nothing more (must_end); the closing
// tags are then not generated (nothing reads them: the reply is complete).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "grammar_cache.h"
#include "waste/waste.h"

namespace waste_serve {

class ConstrainedReply {
public:
    enum class Action { sample, force, end };
    struct Next {
        Action action = Action::sample;
        int32_t token = -1;  // Action::force: the token to emit
    };

    // format/channel: the renderer's "format" ("xtml" or "chat.json") and
    // "channel" (what the prompt left open; empty for none). end_ids: the
    // tokens that end the reply (the EOS and the renderer's stop_ids).
    // Throws std::runtime_error when the engine fails.
    ConstrainedReply(SharedGrammar grammar, const waste_tokenizer* tokenizer, const std::string& format,
                     const std::string& channel, std::vector<int32_t> end_ids);
    ~ConstrainedReply();
    ConstrainedReply(const ConstrainedReply&) = delete;
    ConstrainedReply& operator=(const ConstrainedReply&) = delete;

    // Before a token. logits: a copy of the step's logits, masked in place
    // for Action::sample. Throws std::runtime_error when the engine fails.
    Next next(float* logits, size_t vocab);
    // The token emitted (sampled or forced). Returns true when it ends the
    // reply (an end token: not part of the reply's text).
    bool accept(int32_t token);

private:
    enum class Phase { think, answer };
    bool is_end(int32_t token) const;

    SharedGrammar grammar_;  // kept alive while the state uses it
    waste_grammar_state* state_ = nullptr;
    Phase phase_ = Phase::answer;
    std::vector<int32_t> end_ids_;
    int32_t open_ = -1;                 // XTML markers (-1: chat.json)
    int32_t close_ = -1;
    std::vector<int32_t> think_to_answer_;  // think<|sep|><|open|>response<|sep|>, after a <|close|>
    std::deque<int32_t> forcing_;       // what is left of it to emit
};

}  // namespace waste_serve
