// api_error.h — OpenAI's error object and the HTTP status that carries it
// (k3-chat.md §13.12): {"error": {"message", "type", "param", "code"}}.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace waste_serve {

struct ApiError {
    int status = 400;
    std::string message;
    std::string type = "invalid_request_error";
    std::string param;  // empty: null
    std::string code;   // empty: null

    nlohmann::json to_json() const;
};

// 400 invalid_request_error naming the field.
ApiError bad_request(const std::string& message, const std::string& param = "", const std::string& code = "");

// Serialises JSON for the wire: invalid UTF-8 (a token's partial character)
// is replaced rather than thrown on.
std::string dump(const nlohmann::json& value);

}  // namespace waste_serve
