// batch_stepper.h — the decode steps of concurrent generations evaluated
// together (waste_session_eval_batch): each experts' read and each pass
// over the trunk serves every stream that steps at that moment.
//
// A generation hands step() its session and the token it drew. If no batch
// is running, it waits for the engine's turn lock and then runs every step
// handed in by then (its own included) as one batch; otherwise it waits,
// and the steps handed in meanwhile form the next batch once the running
// one ends (group commit: no timer, no step waits for more than the batch
// ahead of it). With one stream a batch is one step, which is waste_session_eval bit
// for bit; with several, each stream's bits do not depend on which others
// share its batch (waste.h), but differ from its one-step bits within the
// rounding waste.h states, so a stream's tokens can depend on whether it
// had company at a step.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <vector>

#include "metrics.h"
#include "slots.h"
#include "waste/waste.h"

namespace waste_serve {

class BatchStepper {
public:
    BatchStepper(TurnLock& turn, Metrics& metrics) : turn_(turn), metrics_(metrics) {}

    // Appends token to session, batched with the steps handed in meanwhile.
    // WASTE_OK, or the batch's failure (every session of a failed batch was
    // reset by the library) with *error filled.
    waste_status step(waste_session* session, int32_t token, waste_error* error);

private:
    struct Step {
        waste_session* session;
        int32_t token;
        bool done = false;
        waste_status status = WASTE_OK;
        waste_error error{};
    };
    TurnLock& turn_;
    Metrics& metrics_;
    std::mutex mutex_;
    std::condition_variable finished_;
    std::vector<Step*> waiting_;
    bool running_ = false;
};

}  // namespace waste_serve
