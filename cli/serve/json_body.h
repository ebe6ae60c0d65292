// json_body.h — a request body to a JSON object, bounded (§13.13, §13.23):
// empty, not JSON, not an object, invalid UTF-8 or nested deeper than
// kMaxJsonDepth is a 400 that says which.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "api_error.h"

namespace waste_serve {

// Why 64: a chat request is messages → message → content → part → fields,
// tool schemas add a few levels more; 64 leaves room for any real schema
// while a hostile "[[[[..." cannot make the parser (or anything that walks
// the tree recursively afterwards) recurse without bound.
constexpr int kMaxJsonDepth = 64;

// Throws ApiError.
nlohmann::json parse_body(const std::string& body);

}  // namespace waste_serve
