#include "json_body.h"

namespace waste_serve {

namespace {
struct TooDeep {};
}  // namespace

nlohmann::json parse_body(const std::string& body) {
    if (body.empty()) throw bad_request("the request body is empty: send a JSON object");
    nlohmann::json value;
    try {
        value = nlohmann::json::parse(body, [](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
            if (depth > kMaxJsonDepth) throw TooDeep{};
            return true;
        });
    } catch (const TooDeep&) {
        throw bad_request("the request body nests JSON deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    } catch (const nlohmann::json::exception& e) {
        // e.what() names the byte offset and the reason (including ill-formed UTF-8).
        throw bad_request(std::string("the request body is not valid JSON: ") + e.what());
    }
    if (!value.is_object()) throw bad_request(std::string("the request body must be a JSON object, not ") + value.type_name());
    return value;
}

}  // namespace waste_serve
