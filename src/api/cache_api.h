// cache_api.h — the C API's view of the expert-cache policies, shared by
// waste_api.cpp (open options) and cache_api.cpp (names, simulate).
#pragma once

#include <cstdint>

#include "runtime/cache_policy.h"

namespace waste::api {

// A waste_cache_policy value -> the runtime's kind; WASTE_ERR_INVALID_ARGUMENT
// naming the value when it is none.
runtime::CachePolicyKind cache_policy_of(uint32_t value);

}  // namespace waste::api
