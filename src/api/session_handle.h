// session_handle.h — the struct behind the opaque waste_session handle,
// shared by the C API files (session_api.cpp, generate_api.cpp).
//
// pending: the tokens a generation emitted last but has not evaluated yet.
// Evaluating the last generated token is deferred to whichever call needs it
// next (eval, generate, logits, save), so a run that ends — or an answer
// stopped with Ctrl-C — does not wait for a decode step nobody uses, and
// a next turn's prompt is evaluated in one chunk with it. A generation
// leaves at most one token pending (each step evaluates the previous one).
// A snapshot copies it rather than evaluating it (snapshot_api.cpp): taking
// a snapshot then changes nothing about how the session continues.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "api/model_handle.h"

struct waste_session {
    waste_model* model = nullptr;
    std::unique_ptr<waste::runtime::Session> session;
    std::vector<int32_t> pending;

    waste_session() = default;
    waste_session(const waste_session&) = delete;
    waste_session& operator=(const waste_session&) = delete;
    // Gives its slot back (waste_open_options.sessions).
    ~waste_session() {
        if (model && model->session_slots) model->session_slots->give_back(1);
    }

    // Evaluates pending tokens, if any (a failure resets the session and drops them).
    void flush_pending() {
        if (pending.empty()) return;
        std::vector<int32_t> tokens;
        tokens.swap(pending);
        session->eval(tokens.data(), tokens.size());
    }
};
