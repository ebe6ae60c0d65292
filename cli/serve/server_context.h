// server_context.h — what the HTTP handlers share: the engine, the slots,
// the counters and the settings of `waste serve`.
#pragma once

#include <atomic>
#include <string>

#include "engine.h"
#include "metrics.h"
#include "request_memory.h"
#include "slots.h"

namespace waste_serve {

struct ServeSettings {
    std::string api_key;            // empty: no key required
    std::string image_dir;  // --image-dir: requests may name files under it ("" = none)
    size_t parallel = 1;
    size_t queue = 64;
    uint64_t max_body = 16 << 20;  // --max-body: a larger declared Content-Length is 413
};

struct ServerContext {
    ServeSettings settings;
    Metrics metrics;
    Engine engine;
    std::unique_ptr<Slots> slots;
    std::unique_ptr<RequestMemory> request_memory;  // --request-memory
    std::atomic<bool> ready{false};  // the model is loaded
    std::string engine_build;        // "waste 0.1.0"
};

class HttpServer;

// Limits, authentication, the error shape, and every route.
void configure_http(HttpServer& server, ServerContext& context);

}  // namespace waste_serve
