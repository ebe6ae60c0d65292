// session_persist.cpp — Session::save_state / load_state over the state file
// of model/session_file.h.
#include "kernels/elementwise.h"
#include "kernels/trunk_matvec.h"
#include "model/session_file.h"
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
        kernels::matvec(engine_.pool(), *engine_.weights().lm_head, workspace_.normed.data(), workspace_.logits.data());
    } catch (...) {
        state_.reset();
        throw;
    }
}

}  // namespace waste::runtime
