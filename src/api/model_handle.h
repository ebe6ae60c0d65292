// model_handle.h — the struct behind the opaque waste_model handle, shared by
// the C API files.
#pragma once

#include <memory>

#include "format/container.h"
#include "runtime/engine.h"
#include "runtime/memory_plan.h"
#include "waste/waste.h"

struct waste_model {
    std::unique_ptr<waste::format::Container> container;
    waste_open_options options{};
    waste::runtime::MemoryPlan plan;
    std::unique_ptr<waste::runtime::Engine> engine;  // null when opened metadata-only
};
