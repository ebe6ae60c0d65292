// auth.h — the API key check (k3-chat.md §13.22): `Authorization: Bearer
// KEY` on everything but /health, compared in constant time.
#pragma once

#include <string>

namespace waste_serve {

// Compares without stopping at the first differing byte, so the time taken
// does not tell an attacker how much of a guess was right (the length of
// the key is not secret-bearing: it is compared too, at the end).
bool constant_time_equal(const std::string& a, const std::string& b);

// api_key empty: every request passes (any bearer token is accepted).
bool authorized(const std::string& api_key, const std::string& authorization_header);

}  // namespace waste_serve
