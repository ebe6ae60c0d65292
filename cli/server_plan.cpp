// server_plan.cpp — see server_plan.h.
#include "server_plan.h"

#include <algorithm>

#include <fmt/format.h>

#include "cli_common.h"

namespace waste_cli {

ServerPlan server_plan_of(uint32_t parallel, uint32_t queue, const std::string& max_body, const std::string& request_memory) {
    ServerPlan plan;
    plan.parallel = parallel;
    plan.queue = queue;
    if (!max_body.empty()) plan.max_body = parse_size(max_body);
    if (!request_memory.empty()) plan.request_memory = parse_size(request_memory);
    return plan;
}

uint64_t default_request_memory(const ServerPlan& plan) {
    return std::max<uint64_t>((uint64_t{plan.parallel} + plan.queue) * kRequestAllowance, kMaxBodiesInPool * plan.max_body);
}

uint64_t request_memory(const ServerPlan& plan) { return plan.request_memory ? plan.request_memory : default_request_memory(plan); }

nlohmann::json server_plan_json(const ServerPlan& plan, uint64_t budget_bytes) {
    return {{"parallel", plan.parallel},
            {"queue", plan.queue},
            {"max_body_bytes", plan.max_body},
            {"request_memory_bytes", request_memory(plan)},
            {"ceiling_bytes", budget_bytes + request_memory(plan)}};
}

std::string server_plan_text(const ServerPlan& plan, uint64_t budget_bytes, const std::string& indent, int width) {
    return fmt::format("{}{:<{}}{} ({} slot{} + {} queued; bodies up to {})\n{}{:<{}}{} (budget + request memory)\n", indent,
                       "request memory", width, format_bytes(request_memory(plan)), plan.parallel, plan.parallel == 1 ? "" : "s",
                       plan.queue, format_bytes(plan.max_body), indent, "server ceiling", width,
                       format_bytes(budget_bytes + request_memory(plan)));
}

}  // namespace waste_cli
