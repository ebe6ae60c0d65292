// route_log.cpp — the JSON lines of route_log.h, written with fmt (no DOM
// per token: a 60-layer model writes ~60 entries a token).
#include "runtime/route_log.h"

#include <cerrno>
#include <cstring>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <iterator>

#include "platform/error.h"

namespace waste::runtime {

RouteLog::RouteLog(const std::string& path) : path_(path) {
    file_ = std::fopen(path.c_str(), "w");
    if (!file_) fail(WASTE_ERR_IO, "cannot create the route dump {}: {}", path, std::strerror(errno));
}

RouteLog::~RouteLog() {
    if (file_) std::fclose(file_);
}

void RouteLog::write(const format::ModelConfig& config, uint32_t position,
                     const std::vector<std::vector<model::RouteChoice>>& routes) {
    const char* phase = routes.size() > 1 ? "prefill" : "decode";
    fmt::memory_buffer line;
    for (size_t t = 0; t < routes.size(); ++t) {
        line.clear();
        fmt::format_to(std::back_inserter(line), "{{\"tok\": {}, \"phase\": \"{}\", \"layers\": [", position + t, phase);
        bool first = true;
        for (int layer = 0; layer < config.layers && layer < static_cast<int>(routes[t].size()); ++layer) {
            if (!config.is_moe_layer(layer)) continue;
            const model::RouteChoice& r = routes[t][layer];
            fmt::format_to(std::back_inserter(line), "{}{{\"layer\": {}, \"experts\": [{}], \"weights\": [{:.9g}], \"lookahead\": [{}]}}",
                           first ? "" : ", ", layer, fmt::join(r.experts, ", "), fmt::join(r.weights, ", "),
                           fmt::join(r.lookahead, ", "));
            first = false;
        }
        fmt::format_to(std::back_inserter(line), "]}}\n");
        if (std::fwrite(line.data(), 1, line.size(), file_) != line.size())
            fail(WASTE_ERR_IO, "cannot write the route dump {}: {}", path_, std::strerror(errno));
    }
    if (std::fflush(file_) != 0) fail(WASTE_ERR_IO, "cannot write the route dump {}: {}", path_, std::strerror(errno));
}

}  // namespace waste::runtime
