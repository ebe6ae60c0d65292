// error.h — the one exception type used inside libwaste.
//
// Inside the library, failures are thrown as waste::Error carrying the public
// status code and a message that names the offending object and value. The C
// API (src/api) catches every exception at its boundary; none ever crosses it.
// WASTE_CHECK is the always-on invariant assert: a broken invariant is a bug,
// reported as WASTE_ERR_INTERNAL, never an abort.
#pragma once

#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "waste/waste.h"

namespace waste {

class Error : public std::runtime_error {
public:
    Error(waste_status status, std::string message)
        : std::runtime_error(std::move(message)), status_(status) {}
    waste_status status() const { return status_; }

private:
    waste_status status_;
};

template <typename... Args>
[[noreturn]] void fail(waste_status status, fmt::format_string<Args...> format, Args&&... args) {
    throw Error(status, fmt::format(format, std::forward<Args>(args)...));
}

template <typename... Args>
[[noreturn]] void fail_format(fmt::format_string<Args...> format, Args&&... args) {
    throw Error(WASTE_ERR_FORMAT, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace waste

#define WASTE_CHECK(condition)                                                                    \
    do {                                                                                          \
        if (!(condition))                                                                         \
            ::waste::fail(WASTE_ERR_INTERNAL, "internal check failed: {} ({}:{})", #condition,   \
                          __FILE__, __LINE__);                                                    \
    } while (0)
