// route_log.cpp — the JSON lines of route_log.h, written with fmt (no DOM
// per token: a 60-layer model writes ~60 entries a token).
#include "runtime/route_log.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <iterator>

#include "platform/error.h"
#include "platform/output_file.h"

namespace waste::runtime {

RouteLog::RouteLog(const std::string& path) : path_(path) {
    platform::OutputFileOptions options;
    options.want_direct = false;          // lines of ~100 bytes a layer, read back by `waste simulate`
    options.buffer_bytes = size_t{64} << 10;  // 128 KiB in all: inside the plan's runtime allowance, not the budget
    options.buffers = 2;
    file_ = std::make_unique<platform::OutputFile>(path, options);
}

RouteLog::~RouteLog() {
    try {
        finish();
    } catch (const Error&) {  // nowhere to report it; finish() has removed the temporary
    }
}

void RouteLog::finish() {
    const std::unique_ptr<platform::OutputFile> file = std::move(file_);
    if (file) file->commit();  // on failure, `file` dies here and removes path.tmp
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
        WASTE_CHECK(file_);
        file_->write({reinterpret_cast<const uint8_t*>(line.data()), line.size()});
    }
}

}  // namespace waste::runtime
