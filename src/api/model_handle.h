// model_handle.h — the struct behind the opaque waste_model handle, shared by
// the C API files.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "format/container.h"
#include "runtime/engine.h"
#include "runtime/memory_plan.h"
#include "runtime/memory_reserve.h"
#include "waste/waste.h"

struct waste_model {
    std::unique_ptr<waste::format::Container> container;
    waste_open_options options{};
    waste::runtime::MemoryPlan plan;
    std::unique_ptr<waste::runtime::Engine> engine;  // null when opened metadata-only
    std::string usage_path;                  // the learned hotlist's file
    std::vector<uint64_t> usage_at_open;     // its counts when read at open (else empty)
    std::string hotlist_note;                // what happened to it, for info
    uint64_t hotlist_warmed = 0;             // records it warmed
    bool trunk_locked = false;
    std::string mlock_note;                  // empty unless WASTE_OPEN_MLOCK_TRUNK
    // The plan's snapshot reserve; shared with every snapshot, which gives its
    // bytes back when freed, even after the model is closed.
    std::shared_ptr<waste::runtime::MemoryReserve> snapshot_reserve;
    // Live sessions: at most options.sessions when that is set, else unbounded.
    std::unique_ptr<waste::runtime::MemoryReserve> session_slots;
    ~waste_model();
};
