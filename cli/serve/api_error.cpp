#include "api_error.h"

namespace waste_serve {

nlohmann::json ApiError::to_json() const {
    nlohmann::json error = {{"message", message}, {"type", type}, {"param", nullptr}, {"code", nullptr}};
    if (!param.empty()) error["param"] = param;
    if (!code.empty()) error["code"] = code;
    return {{"error", error}};
}

ApiError bad_request(const std::string& message, const std::string& param, const std::string& code) {
    return ApiError{400, message, "invalid_request_error", param, code};
}

std::string dump(const nlohmann::json& value) {
    return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace waste_serve
