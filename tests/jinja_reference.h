// jinja_reference.h — renders many (template, context) jobs through the
// Python reference (tools/jinja-reference/render.py: Debian's python3-jinja2
// set up as Hugging Face transformers sets it up) in one process, and
// compares WASTE's engine with it.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

namespace waste_test {

struct JinjaJob {
    std::string id;
    std::string template_source;
    nlohmann::ordered_json context;
};

// The fixed time both sides give strftime_now (2026-03-14 15:09:26 UTC).
inline constexpr int64_t jinja_reference_now = 1773500966;

// id -> {"output": text} or {"error": {"raised", "type", "message"}}.
// Fails the calling test (ADD_FAILURE) and returns {} when Python or jinja2 is missing.
std::map<std::string, nlohmann::ordered_json> render_with_jinja2(const std::vector<JinjaJob>& jobs);

// Renders one job with WASTE's engine and compares it with Jinja2's result:
// empty when they agree (same text, or both failed and, for
// raise_exception, with the same message), else what differs.
std::string compare_with_jinja2(const JinjaJob& job, const nlohmann::ordered_json& reference);

}  // namespace waste_test
