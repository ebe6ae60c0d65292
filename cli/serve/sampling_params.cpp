#include "sampling_params.h"

#include <cmath>

#include "api_error.h"

namespace waste_serve {

namespace {

using nlohmann::json;

std::string shown(const json& value) {
    std::string text = dump(value);
    if (text.size() > 64) text = text.substr(0, 61) + "...";
    return text;
}

// A present, non-null field; null counts as absent (the SDKs send nulls).
const json* field(const json& request, const char* name) {
    const auto it = request.find(name);
    if (it == request.end() || it->is_null()) return nullptr;
    return &*it;
}

double number_in(const json& request, const char* name, double low, double high, double fallback) {
    const json* value = field(request, name);
    if (!value) return fallback;
    if (!value->is_number())
        throw bad_request(std::string("'") + name + "' must be a number, not " + shown(*value), name);
    const double x = value->get<double>();
    if (!std::isfinite(x) || x < low || x > high)
        throw bad_request(std::string("'") + name + "' must be between " + shown(low) + " and " + shown(high) + ", not " +
                              shown(*value),
                          name);
    return x;
}

// An integer in [low, high]; a float (even 3.0), a string or an integer out
// of range (1e30 parses as a float) is refused naming the value.
int64_t integer_in(const json& value, const char* name, int64_t low, int64_t high) {
    if (!value.is_number_integer())
        throw bad_request(std::string("'") + name + "' must be an integer, not " + shown(value), name);
    if (value.is_number_unsigned() && value.get<uint64_t>() > static_cast<uint64_t>(high))
        throw bad_request(std::string("'") + name + "' must be at most " + std::to_string(high) + ", not " + shown(value), name);
    const int64_t x = value.get<int64_t>();
    if (x < low || x > high)
        throw bad_request(std::string("'") + name + "' must be between " + std::to_string(low) + " and " +
                              std::to_string(high) + ", not " + shown(value),
                          name);
    return x;
}

bool boolean(const json& request, const char* name) {
    const json* value = field(request, name);
    if (!value) return false;
    if (!value->is_boolean()) throw bad_request(std::string("'") + name + "' must be true or false, not " + shown(*value), name);
    return value->get<bool>();
}

// OpenAI's logit_bias: {"token id": bias}, the id a decimal string (JSON
// keys are strings), the bias a number from -100 to 100.
std::vector<std::pair<int32_t, float>> logit_bias(const json& request, uint32_t vocabulary) {
    std::vector<std::pair<int32_t, float>> biases;
    const json* value = field(request, "logit_bias");
    if (!value) return biases;
    if (!value->is_object()) throw bad_request("'logit_bias' must be an object of token ids to biases, not " + shown(*value), "logit_bias");
    if (value->size() > kMaxLogitBiasTokens)
        throw bad_request("'logit_bias' holds at most " + std::to_string(kMaxLogitBiasTokens) + " tokens, not " +
                              std::to_string(value->size()),
                          "logit_bias");
    for (const auto& [key, bias] : value->items()) {
        const bool digits = !key.empty() && key.size() <= 10 && key.find_first_not_of("0123456789") == std::string::npos;
        const uint64_t id = digits ? std::stoull(key) : UINT64_MAX;
        if (id >= vocabulary)
            throw bad_request("'logit_bias' names token " + shown(key) + ": ids are integers from 0 to " +
                                  std::to_string(vocabulary - 1),
                              "logit_bias");
        if (!bias.is_number() || !std::isfinite(bias.get<double>()) || std::fabs(bias.get<double>()) > kMaxLogitBias)
            throw bad_request("'logit_bias' of token " + key + " must be a number from -100 to 100, not " + shown(bias),
                              "logit_bias");
        biases.emplace_back(static_cast<int32_t>(id), static_cast<float>(bias.get<double>()));
    }
    return biases;
}

}  // namespace

SamplingParams read_sampling_params(const json& request, Endpoint endpoint, uint32_t vocabulary, const SamplingDefaults& defaults) {
    SamplingParams p;
    p.temperature = number_in(request, "temperature", 0, 2, defaults.temperature);
    p.top_p = number_in(request, "top_p", 0, 1, defaults.top_p);
    if (p.top_p == 0) p.top_p = 1e-9;  // OpenAI accepts 0: only the most likely token survives
    p.top_k = defaults.top_k;
    if (const json* v = field(request, "top_k")) p.top_k = static_cast<uint32_t>(integer_in(*v, "top_k", 0, 1 << 30));
    p.min_p = number_in(request, "min_p", 0, 1, defaults.min_p);
    if (const json* v = field(request, "seed"))
        p.seed = static_cast<uint64_t>(integer_in(*v, "seed", INT64_MIN, INT64_MAX));
    p.frequency_penalty = number_in(request, "frequency_penalty", -2, 2, 0);
    p.presence_penalty = number_in(request, "presence_penalty", -2, 2, 0);
    p.logit_bias = logit_bias(request, vocabulary);

    // §13.8: max_completion_tokens, else max_tokens.
    for (const char* name : {"max_tokens", "max_completion_tokens"})
        if (const json* v = field(request, name)) p.max_tokens = static_cast<uint32_t>(integer_in(*v, name, 1, 1 << 30));

    if (const json* v = field(request, "stop")) {
        json list = v->is_string() ? json::array({*v}) : *v;
        if (!list.is_array()) throw bad_request("'stop' must be a string or a list of strings, not " + shown(*v), "stop");
        if (list.size() > kMaxStopStrings)
            throw bad_request("'stop' holds at most " + std::to_string(kMaxStopStrings) + " strings, not " +
                                  std::to_string(list.size()),
                              "stop");
        for (const json& s : list) {
            if (!s.is_string()) throw bad_request("'stop' must hold strings only, not " + shown(s), "stop");
            const std::string text = s.get<std::string>();
            if (text.empty()) throw bad_request("a stop string cannot be empty", "stop");
            if (text.size() > kMaxStopStringBytes)
                throw bad_request("a stop string is at most " + std::to_string(kMaxStopStringBytes) + " bytes", "stop");
            p.stop.push_back(text);
        }
    }

    if (const json* v = field(request, "n"))
        if (integer_in(*v, "n", 1, 1) != 1) throw bad_request("'n' must be 1", "n");

    p.stream = boolean(request, "stream");
    if (const json* v = field(request, "stream_options")) {
        if (!v->is_object()) throw bad_request("'stream_options' must be an object, not " + shown(*v), "stream_options");
        p.include_usage = boolean(*v, "include_usage");
    }

    if (endpoint == Endpoint::chat) {
        p.logprobs = boolean(request, "logprobs");
        if (const json* v = field(request, "top_logprobs")) {
            p.top_logprobs = static_cast<uint32_t>(integer_in(*v, "top_logprobs", 0, kMaxTopLogprobs));
            if (!p.logprobs && p.top_logprobs > 0)
                throw bad_request("'top_logprobs' needs 'logprobs': true", "top_logprobs");
        }
        if (const json* v = field(request, "response_format"))
            if (!v->is_object()) throw bad_request("'response_format' must be an object, not " + shown(*v), "response_format");
    } else {
        // The legacy completions API: logprobs is how many alternatives (0-5).
        if (const json* v = field(request, "logprobs")) {
            p.logprobs = true;
            p.top_logprobs = static_cast<uint32_t>(integer_in(*v, "logprobs", 0, 5));
        }
        if (p.stream) throw bad_request("/v1/completions is not streamed here: send 'stream': false", "stream");
    }
    return p;
}

}  // namespace waste_serve
