// serve_request_fuzz.cpp — libFuzzer target over the server's request
// parsing and validation (cli/serve): a request body through parse_body
// (size, UTF-8, depth, object), then read_sampling_params for both
// endpoints, as the HTTP handlers call them before anything is rendered
// (the rendering itself is chat_request_fuzz's).
//
// The outcome must be one of two: an ApiError that is a 4xx with a message
// and whose error object serialises, or parameters inside the ranges the
// validator promises (the sampler relies on them: a temperature of NaN or a
// stop list of 10,000 strings must never get through). Any other exception,
// a crash, a hang, a leak or a sanitizer report is a finding.
// Seeds: fuzz/seeds/serve_request_fuzz/ (request bodies).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "api_error.h"
#include "json_body.h"
#include "sampling_params.h"

namespace {

// Any vocabulary size will do: logit_bias ids are checked against it.
constexpr uint32_t kVocabulary = 1000;

void check_error(const waste_serve::ApiError& error) {
    if (error.status < 400 || error.status > 499 || error.message.empty()) __builtin_trap();
    (void)waste_serve::dump(error.to_json());
}

void check_params(const waste_serve::SamplingParams& p) {
    const bool ok = std::isfinite(p.temperature) && p.temperature >= 0 && p.temperature <= 2 && p.top_p > 0 && p.top_p <= 1 &&
                    p.min_p >= 0 && p.min_p <= 1 && std::fabs(p.frequency_penalty) <= 2 && std::fabs(p.presence_penalty) <= 2 &&
                    (!p.max_tokens || (*p.max_tokens >= 1 && *p.max_tokens <= (1u << 30))) &&
                    p.stop.size() <= waste_serve::kMaxStopStrings && p.top_logprobs <= waste_serve::kMaxTopLogprobs &&
                    (p.logprobs || p.top_logprobs == 0);
    if (!ok) __builtin_trap();
    for (const std::string& stop : p.stop)
        if (stop.empty() || stop.size() > waste_serve::kMaxStopStringBytes) __builtin_trap();
    if (p.logit_bias.size() > waste_serve::kMaxLogitBiasTokens) __builtin_trap();
    for (const auto& [id, bias] : p.logit_bias)
        if (id < 0 || static_cast<uint32_t>(id) >= kVocabulary || !(std::fabs(bias) <= waste_serve::kMaxLogitBias)) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string body(reinterpret_cast<const char*>(data), size);
    nlohmann::json request;
    try {
        request = waste_serve::parse_body(body);
    } catch (const waste_serve::ApiError& error) {
        check_error(error);
        return 0;
    }
    if (!request.is_object()) __builtin_trap();  // parse_body promises an object
    for (const auto endpoint : {waste_serve::Endpoint::chat, waste_serve::Endpoint::completion}) {
        try {
            check_params(waste_serve::read_sampling_params(request, endpoint, kVocabulary, waste_serve::SamplingDefaults{0.8, 0.95, 0, 0}));
        } catch (const waste_serve::ApiError& error) {
            check_error(error);
        }
    }
    return 0;
}
