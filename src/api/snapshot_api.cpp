// snapshot_api.cpp — session snapshots of the C API (prompt reuse): take,
// restore, free, and their accounting against the plan's snapshot reserve.
//
// What the caller serialises: snapshot and restore are engine calls on a
// session and follow the sessions' rule (one call at a time per model).
// waste_snapshot_free, _bytes and _position touch no session and no engine:
// they may run on any thread at any time, except concurrently with a call
// that is reading that same snapshot (a restore of it). A snapshot is never
// modified after it is taken, so restoring it into several sessions is
// reading only.
#include <memory>

#include "api/api_support.h"
#include "api/model_handle.h"
#include "api/session_handle.h"
#include "runtime/session_snapshot.h"

using waste::api::guarded;

struct waste_snapshot {
    const waste_model* model = nullptr;  // identity only (restore checks it); never dereferenced after the take
    std::shared_ptr<waste::runtime::MemoryReserve> reserve;
    uint64_t bytes = 0;                  // what it took from the reserve
    waste::runtime::SessionSnapshot state;
    // The session's generated token not evaluated yet (session_handle.h),
    // copied as is: the restored session evaluates it with whatever comes
    // next, in the same chunk as the original would have.
    std::vector<int32_t> pending;

    waste_snapshot() = default;
    waste_snapshot(const waste_snapshot&) = delete;
    waste_snapshot& operator=(const waste_snapshot&) = delete;
    ~waste_snapshot() {
        if (reserve) reserve->give_back(bytes);
    }
};

namespace {

// What a snapshot is charged: its floats and pending ids, and a fixed 256
// bytes for the handle and its three heap blocks' allocator headers (the
// struct is ~120 bytes, glibc's headers 16 bytes each).
constexpr uint64_t snapshot_overhead_bytes = 256;

uint64_t charged_bytes(const waste::format::ModelConfig& config, uint32_t state_position, size_t pending) {
    return snapshot_overhead_bytes + 4 * waste::runtime::snapshot_floats(config, state_position) + 4 * static_cast<uint64_t>(pending);
}

}  // namespace

extern "C" {

waste_status waste_session_snapshot(waste_session* session, waste_snapshot** out_snapshot, waste_error* error) {
    return guarded(error, [&] {
        if (!session || !out_snapshot) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_session_snapshot: session and out_snapshot are required");
        *out_snapshot = nullptr;
        waste_model& model = *session->model;
        const uint32_t position = session->session->position();
        const uint64_t bytes = charged_bytes(model.container->config(), position, session->pending.size());
        auto snapshot = std::make_unique<waste_snapshot>();
        if (!model.snapshot_reserve->try_take(bytes))
            waste::fail(WASTE_ERR_BUDGET,
                        "waste_session_snapshot: a snapshot of {} tokens takes {} bytes; the snapshot reserve of {} bytes "
                        "(waste_open_options.snapshot_bytes) has {} bytes in use, {} free; free older snapshots or reserve more",
                        position + session->pending.size(), bytes, model.snapshot_reserve->capacity(),
                        model.snapshot_reserve->used(), model.snapshot_reserve->capacity() - model.snapshot_reserve->used());
        snapshot->reserve = model.snapshot_reserve;  // from here its destructor gives the bytes back
        snapshot->bytes = bytes;
        snapshot->model = &model;
        snapshot->state = session->session->snapshot();
        snapshot->pending = session->pending;
        *out_snapshot = snapshot.release();
    });
}

waste_status waste_session_restore(waste_session* session, const waste_snapshot* snapshot, waste_error* error) {
    return guarded(error, [&] {
        if (!session || !snapshot) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_session_restore: session and snapshot are required");
        if (snapshot->model != session->model)
            waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_session_restore: the snapshot was taken from a session of another model");
        const uint64_t tokens = snapshot->state.position + snapshot->pending.size();
        if (tokens > session->session->context_length())
            waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_session_restore: the snapshot holds {} tokens, the session's context is {}",
                        tokens, session->session->context_length());
        std::vector<int32_t> pending = snapshot->pending;  // the one allocation, before the session changes
        session->session->restore(snapshot->state);        // checks everything before it copies; then cannot fail
        session->pending.swap(pending);
    });
}

void waste_snapshot_free(waste_snapshot* snapshot) { delete snapshot; }

uint64_t waste_snapshot_bytes(const waste_snapshot* snapshot) { return snapshot ? snapshot->bytes : 0; }

uint32_t waste_snapshot_position(const waste_snapshot* snapshot) {
    return snapshot ? snapshot->state.position + static_cast<uint32_t>(snapshot->pending.size()) : 0;
}

uint64_t waste_model_snapshot_bytes(const waste_model* model, uint32_t position) {
    return model ? charged_bytes(model->container->config(), position, 0) : 0;
}

}  // extern "C"
