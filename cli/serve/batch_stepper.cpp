#include "batch_stepper.h"

namespace waste_serve {

waste_status BatchStepper::step(waste_session* session, int32_t token, waste_error* error) {
    Step mine{session, token};
    std::unique_lock lock(mutex_);
    waiting_.push_back(&mine);
    while (!mine.done) {
        if (running_) {
            finished_.wait(lock);
            continue;
        }
        // No batch running: this thread runs the next one. It waits for the
        // engine's turn first, and takes every step handed in by then (its
        // own included): streams still reading their logits or sampling
        // under the turn join this batch instead of the one after.
        running_ = true;
        lock.unlock();
        std::vector<Step*> batch;
        waste_error failure{};
        waste_status status;
        {
            std::lock_guard turn(turn_);
            lock.lock();
            batch.swap(waiting_);
            lock.unlock();
            std::vector<waste_session*> sessions;
            std::vector<int32_t> tokens;
            for (const Step* s : batch) {
                sessions.push_back(s->session);
                tokens.push_back(s->token);
            }
            status = waste_session_eval_batch(sessions.data(), tokens.data(), sessions.size(), &failure);
        }
        ++metrics_.decode_batches;
        metrics_.decode_batch_rows += batch.size();
        lock.lock();
        for (Step* s : batch) {
            s->status = status;
            s->error = failure;
            s->done = true;
        }
        running_ = false;
        finished_.notify_all();
    }
    if (mine.status != WASTE_OK && error) *error = mine.error;
    return mine.status;
}

}  // namespace waste_serve
