// json_body.h — a request body to a JSON object, bounded (§13.13, §13.23):
// empty, not JSON, not an object, invalid UTF-8 or nested deeper than
// kMaxJsonDepth is a 400 that says which; the parsed value's memory is
// reserved before it is built.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "api_error.h"
#include "request_memory.h"

namespace waste_serve {

// Why 64: a chat request is messages → message → content → part → fields,
// tool schemas add a few levels more; 64 leaves room for any real schema
// while a hostile "[[[[..." cannot make the parser (or anything that walks
// the tree recursively afterwards) recurse without bound.
constexpr int kMaxJsonDepth = 64;

// What text takes once parsed into an nlohmann::json (an estimate from a
// first pass that builds nothing; json_body.cpp states its terms). Throws
// ApiError 400 as parse_body does.
uint64_t parsed_json_bytes(const std::string& text);

// Throws ApiError. With memory, the parsed value's bytes
// (parsed_json_bytes) are reserved in it first (a 413 or 503 from
// RequestMemory before anything is built), and told in *parsed_bytes when
// given.
nlohmann::json parse_body(const std::string& body, RequestMemory::Reservation* memory = nullptr, uint64_t* parsed_bytes = nullptr);

}  // namespace waste_serve
