#include "auth.h"

namespace waste_serve {

bool constant_time_equal(const std::string& a, const std::string& b) {
    // Walk the key's full length whatever the guess's length is.
    unsigned char diff = 0;
    for (size_t i = 0; i < b.size(); ++i) {
        const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
        diff |= static_cast<unsigned char>(x ^ static_cast<unsigned char>(b[i]));
    }
    return diff == 0 && a.size() == b.size();
}

bool authorized(const std::string& api_key, const std::string& authorization_header) {
    if (api_key.empty()) return true;
    static const std::string prefix = "Bearer ";
    if (authorization_header.compare(0, prefix.size(), prefix) != 0) return false;
    return constant_time_equal(authorization_header.substr(prefix.size()), api_key);
}

}  // namespace waste_serve
