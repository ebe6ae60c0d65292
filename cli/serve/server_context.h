// server_context.h — what the HTTP handlers share: the engine, the slots,
// the counters and the settings of `waste serve`.
#pragma once

#include <atomic>
#include <string>

#include "engine.h"
#include "metrics.h"
#include "slots.h"

namespace httplib {
class Server;
}

namespace waste_serve {

struct ServeSettings {
    std::string api_key;            // empty: no key required
    std::string image_dir;  // --image-dir: requests may name files under it ("" = none)
    size_t parallel = 1;
    size_t queue = 64;
};

struct ServerContext {
    ServeSettings settings;
    Metrics metrics;
    Engine engine;
    std::unique_ptr<Slots> slots;
    std::atomic<bool> ready{false};  // the model is loaded
    std::string engine_build;        // "waste 0.1.0"
};

// Limits, authentication, the error shape, and every route.
void configure_http(httplib::Server& server, ServerContext& context);

}  // namespace waste_serve
