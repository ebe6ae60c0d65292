// session_handle.h — the struct behind the opaque waste_session handle,
// shared by the C API files (session_api.cpp, generate_api.cpp).
//
// pending: the tokens a generation emitted last but has not evaluated yet.
// Evaluating the last generated token is deferred to whichever call needs it
// next (eval, generate, logits, save), so a run that ends — or an answer
// stopped with Ctrl-C — does not wait for a decode step nobody uses, and
// a next turn's prompt is evaluated in one chunk with it.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "api/model_handle.h"

struct waste_session {
    waste_model* model = nullptr;
    std::unique_ptr<waste::runtime::Session> session;
    std::vector<int32_t> pending;

    // Evaluates pending tokens, if any (a failure resets the session and drops them).
    void flush_pending() {
        if (pending.empty()) return;
        std::vector<int32_t> tokens;
        tokens.swap(pending);
        session->eval(tokens.data(), tokens.size());
    }
};
