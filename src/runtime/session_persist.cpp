// session_persist.cpp — a Session's state kept outside it: the state file
// (Session::save_state / load_state over model/session_file.h) and in-RAM
// snapshots (Session::snapshot / restore, runtime/session_snapshot.h). Both
// copy the state through model::for_each_state_field.
#include <algorithm>
#include <cstring>

#include "kernels/elementwise.h"
#include "model/forward.h"
#include "model/session_file.h"
#include "platform/error.h"
#include "runtime/engine.h"

namespace waste::runtime {

void Session::save_state(const std::string& path) const { model::save_session_state(engine_.config(), state_, path); }

void Session::load_state(const std::string& path) {
    model::load_session_state(engine_.config(), path, state_);  // resets state_ when it throws
    if (state_.position == 0) return;
    // The next-token logits from the residual stream, exactly as forward_chunk
    // ends (final norm, lm_head); the save/load round-trip test holds the two
    // to the same bits.
    const format::ModelConfig& c = engine_.config();
    try {
        kernels::rmsnorm(kernels::active_isa(), state_.residual.data(), engine_.weights().final_norm.data(), static_cast<float>(c.rms_eps), c.hidden,
                         workspace_.normed.data());
        model::project_with(engine_.pool(), workspace_, engine_.lut_mode() == kernels::VqLutMode::int8, *engine_.weights().lm_head,
                            workspace_.normed.data(), c.hidden, 1, workspace_.logits.data(), workspace_.logits.size());
    } catch (...) {
        state_.reset();
        throw;
    }
}

namespace {

// The block residuals travel whole (a few rows), so that a snapshot's size
// depends on its position only.
uint32_t max_blocks(const format::ModelConfig& c, const model::SessionState& s) {
    return c.hidden ? static_cast<uint32_t>(s.block_residuals.size() / c.hidden) : 0;
}

}  // namespace

SessionSnapshot Session::snapshot() const {
    const format::ModelConfig& c = engine_.config();
    SessionSnapshot out;
    out.position = state_.position;
    out.n_blocks = state_.n_blocks;
    out.state.resize(snapshot_floats(c, state_.position) - workspace_.logits.size());
    size_t at = 0;
    model::for_each_state_field(c, state_, state_.position, max_blocks(c, state_), [&](const model::StateSpan<const float>& span) {
        WASTE_CHECK(at + span.floats <= out.state.size());
        std::copy_n(span.data, span.floats, out.state.data() + at);
        at += span.floats;
    });
    WASTE_CHECK(at == out.state.size());
    out.logits = workspace_.logits;
    return out;
}

void Session::restore(const SessionSnapshot& snapshot) {
    const format::ModelConfig& c = engine_.config();
    // Everything is checked before a float is copied: a refused snapshot
    // leaves the session untouched.
    if (snapshot.position > state_.context_length)
        fail(WASTE_ERR_INVALID_ARGUMENT, "restore: the snapshot holds {} tokens, this session's context length is {}",
             snapshot.position, state_.context_length);
    if (snapshot.n_blocks > max_blocks(c, state_))
        fail(WASTE_ERR_INVALID_ARGUMENT, "restore: the snapshot has {} block residuals, this model at most {}", snapshot.n_blocks,
             max_blocks(c, state_));
    if (snapshot.logits.size() != workspace_.logits.size() ||
        snapshot.state.size() + snapshot.logits.size() != snapshot_floats(c, snapshot.position))
        fail(WASTE_ERR_INVALID_ARGUMENT,
             "restore: the snapshot ({} state floats, {} logits at {} tokens) is not of this model's shape ({} floats, vocab {})",
             snapshot.state.size(), snapshot.logits.size(), snapshot.position, snapshot_floats(c, snapshot.position),
             workspace_.logits.size());
    size_t at = 0;
    model::for_each_state_field(c, state_, snapshot.position, max_blocks(c, state_), [&](const model::StateSpan<float>& span) {
        std::copy_n(snapshot.state.data() + at, span.floats, span.data);
        at += span.floats;
    });
    for (size_t l = 0; l < state_.layers.size(); ++l)
        if (!format::is_delta_rule(c.layer_kinds[l])) state_.layers[l].n_kv = snapshot.position;  // MLA, GQA
    state_.position = snapshot.position;
    state_.n_blocks = snapshot.n_blocks;
    std::copy(snapshot.logits.begin(), snapshot.logits.end(), workspace_.logits.begin());
}

}  // namespace waste::runtime
