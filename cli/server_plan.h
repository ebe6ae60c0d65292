// server_plan.h — the memory `waste serve` holds outside the model's plan,
// as `waste plan --parallel N --queue M` and the server's start line show
// it: the request memory pool (cli/serve/request_memory.h), whose default
// follows from the slots, the queue and the largest body.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace waste_cli {

// Why these: --max-body 16 MiB takes an image of ~12 MB as a base64 data:
// URL; 32 bodies of pool hold such a request whole (its body, its parse at
// a few times its longest string, the image's bytes). Text costs more:
// rendering a chat takes ~64 bytes a byte of its text (http_server.cpp),
// so a default pool renders ~7 MB of text at once, and 8 MiB a request is
// a chat of ~100 KB of text (tens of thousands of tokens).
constexpr uint64_t kDefaultMaxBody = uint64_t{16} << 20;
constexpr uint64_t kRequestAllowance = uint64_t{8} << 20;
constexpr uint64_t kMaxBodiesInPool = 32;

struct ServerPlan {
    uint32_t parallel = 1;
    uint32_t queue = 64;
    uint64_t max_body = kDefaultMaxBody;
    uint64_t request_memory = 0;  // 0: the default below
};

// The plan of `waste serve --parallel --queue --max-body --request-memory`,
// the sizes as given on its command line ("" for the default).
ServerPlan server_plan_of(uint32_t parallel, uint32_t queue, const std::string& max_body, const std::string& request_memory);

// max((parallel + queue) x 8 MiB, 32 x max_body): every admitted or queued
// request its allowance, and one max-size body its peak.
uint64_t default_request_memory(const ServerPlan& plan);
uint64_t request_memory(const ServerPlan& plan);

// {"parallel", "queue", "max_body_bytes", "request_memory_bytes",
// "ceiling_bytes"}: the ceiling is the budget plus the pool.
nlohmann::json server_plan_json(const ServerPlan& plan, uint64_t budget_bytes);
// The lines `waste plan` and `waste serve` print (labels width wide).
std::string server_plan_text(const ServerPlan& plan, uint64_t budget_bytes, const std::string& indent, int width);

}  // namespace waste_cli
