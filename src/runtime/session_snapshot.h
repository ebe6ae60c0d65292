// session_snapshot.h — a session's state copied in RAM, for prompt reuse: a
// server keeps the state at the end of recent prompts and resumes a request
// whose prompt extends one, prefilling only the new tokens.
//
// A snapshot holds exactly what makes the next token come out bit-identical:
// the state's fields in the session file's order (model::for_each_state_field:
// KDA state and conv rings, the MLA latent rows up to the position — not the
// whole context allocation —, the block residuals, the residual stream) and
// the next-token logits, which a state file recomputes but a snapshot copies
// (a vocabulary of floats is cheaper than an LM-head matvec on every resume).
//
// Not here: the accounting against the plan's snapshot reserve and the
// generated token not evaluated yet (the C API's waste_snapshot,
// src/api/snapshot_api.cpp); sampler state (the caller's).
#pragma once

#include <cstdint>
#include <vector>

#include "format/model_config.h"

namespace waste::runtime {

struct SessionSnapshot {
    uint32_t position = 0;        // tokens the state holds
    uint32_t n_blocks = 0;        // block residuals in use (AttnRes)
    std::vector<float> state;     // every field at `position`, packed in the session file's order,
                                  // the block residuals whole ([n_blocks max][H])
    std::vector<float> logits;    // [vocab] the next-token logits
};

// Floats a snapshot at `position` tokens holds: state plus logits. A function
// of the position alone, so that a snapshot's size is known before it is
// taken (waste_model_snapshot_bytes plans with it).
uint64_t snapshot_floats(const format::ModelConfig& config, uint32_t position);

}  // namespace waste::runtime
