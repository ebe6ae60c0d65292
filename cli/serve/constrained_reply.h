// constrained_reply.h — holds one chat reply to a plan: free thinking,
// markup the server writes itself, and values held to grammars
// (response_format and tool_choice, docs/SERVE.md "Structured output"). It
// is the one place that knows where in a reply a grammar applies, so the
// generation loop only asks it, per token, "sample from these masked
// logits, or emit this token, or stop here" and tells it the token taken.
//
// A plan is a queue of stages:
// - think: free text, but its structure is ours: `<|open|>` and the end
//   tokens are masked (a constrained reply must reach its answer); the
//   model leaves it by writing `<|close|>`.
// - force: tokens emitted as if generated (evaluated, not sampled): markup
//   whose only right continuation is known, e.g. after a `<|close|>` in
//   think, "think<|sep|><|open|>response<|sep|>". Letting the model write a
//   header's text would let it open anything else.
// - grammar: every token masked by a grammar; the stage's end tokens are
//   allowed only where the grammar may end. A final stage's end token ends
//   the reply (it is not part of it); another's is emitted (`<|close|>` of
//   an argument) and the next stage begins. When the grammar allows
//   nothing more, a final stage ends the reply at once, another emits its
//   first end token, and one without end tokens (a JSON object, a name and
//   the text after it: grammars that end by themselves) gives way to the
//   next stage.
// The reply ends after the last stage (the closing tags are not generated:
// nothing reads them, the reply parser files what it has).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "grammar_cache.h"
#include "waste/waste.h"

namespace waste_serve {

class ConstrainedReply;

// The XTML markers' ids, and markup text to ids (for forced stages).
struct Markup {
    const waste_tokenizer* tokenizer = nullptr;
    bool xtml = false;
    int32_t open = -1, close = -1, sep = -1, end_of_msg = -1;
    // What ends a think stage, and what it may not write: XTML's <|close|>,
    // and <|open|> and <|end_of_msg|>; a Jinja family's from its call
    // syntax (its </think>; the markers that would open a call).
    int32_t think_exit = -1;
    std::vector<int32_t> think_masked;
    // A Jinja family's call markers: masked in every grammar stage (but
    // where one is the stage's end), so a value cannot write structure.
    std::vector<int32_t> structure;
    // Throws std::runtime_error when a marker is not one token.
    Markup(const waste_tokenizer* tokenizer, bool xtml);
    // A marker's id where the tokenizer has it as one special token, else -1.
    int32_t special(const std::string& marker) const;
    // Text to ids without markup (k3-chat.md Rule 1: a name or key that
    // spells "<|open|>" is text, never a marker).
    std::vector<int32_t> plain(const std::string& text) const;
    // A tag: marker (open or close), the header's text, <|sep|>.
    std::vector<int32_t> tag(int32_t marker, const std::string& header) const;
    std::string text(const std::vector<int32_t>& tokens) const;  // plain text of ids
};

struct Stage {
    enum class Kind { think, force, grammar } kind = Kind::force;
    std::vector<int32_t> tokens;  // force: what to emit
    SharedGrammar grammar;        // grammar
    std::vector<int32_t> ends;    // grammar: what may end it
    bool final = false;           // grammar: its end ends the reply
    // Called when the stage is done, with the tokens it took (its end token
    // included); may append stages to the reply (a tool's arguments, once
    // the model has chosen the tool).
    std::function<void(ConstrainedReply&, const std::vector<int32_t>&)> on_done;

    static Stage think() {
        Stage s;
        s.kind = Kind::think;
        return s;
    }
    static Stage force(std::vector<int32_t> tokens) {
        Stage s;
        s.tokens = std::move(tokens);
        return s;
    }
    static Stage held(SharedGrammar grammar, std::vector<int32_t> ends, bool final) {
        Stage s;
        s.kind = Kind::grammar;
        s.grammar = std::move(grammar);
        s.ends = std::move(ends);
        s.final = final;
        return s;
    }
};

class ConstrainedReply {
public:
    enum class Action { sample, force, end };
    struct Next {
        Action action = Action::sample;
        int32_t token = -1;  // Action::force: the token to emit
    };

    // think_ends: the tokens masked in a think stage (EOS, stop ids).
    ConstrainedReply(std::shared_ptr<const Markup> markup, std::vector<int32_t> think_ends)
        : markup_(std::move(markup)), think_ends_(std::move(think_ends)) {}
    ~ConstrainedReply();
    ConstrainedReply(const ConstrainedReply&) = delete;
    ConstrainedReply& operator=(const ConstrainedReply&) = delete;

    void add(Stage stage) { stages_.push_back(std::move(stage)); }
    const Markup& markup() const { return *markup_; }

    // Before a token. logits: a copy of the step's logits, masked in place
    // for Action::sample. Throws std::runtime_error when the engine fails.
    Next next(float* logits, size_t vocab);
    // The token emitted (sampled or forced). Returns true when it ends the
    // reply (a final stage's end token: not part of the reply's text).
    bool accept(int32_t token);

private:
    void begin_stage();  // makes the front stage's grammar state
    void finish_stage();

    std::shared_ptr<const Markup> markup_;
    std::vector<int32_t> think_ends_;
    std::deque<Stage> stages_;
    bool begun_ = false;                    // the first stage has begun
    size_t forced_ = 0;                     // force: tokens emitted so far
    std::vector<int32_t> taken_;            // the front stage's tokens
    waste_grammar_state* state_ = nullptr;  // the front grammar stage's
};

// response_format: the answer held to grammar. format/channel: the
// renderer's "format" ("xtml" or "chat.json") and "channel" (what the prompt
// left open; empty for none). end_ids: what ends the reply (EOS, stop_ids).
// chat.json: the whole reply is the answer. XTML: after think (if the
// prompt opened it), the response channel, ended by its <|close|> too.
std::unique_ptr<ConstrainedReply> constrain_answer(SharedGrammar grammar, const waste_tokenizer* tokenizer,
                                                   const std::string& format, const std::string& channel,
                                                   std::vector<int32_t> end_ids);

}  // namespace waste_serve
