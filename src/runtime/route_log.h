// route_log.h — `--dump-route FILE`: each evaluated token's routing as JSON
// lines, readable back by `waste simulate` (runtime/cache_trace's format).
//
// One line per token, one entry per MoE layer in layer order:
//   {"tok": 12, "phase": "decode", "layers": [
//      {"layer": 1, "experts": [ids, selection order], "weights": [f32 ...],
//       "lookahead": [ids predicted at the previous layer, best first]}, ...]}
// "tok" is the token's position in the session; "phase" is "prefill" for a
// chunk of several tokens and "decode" for one; "lookahead" is empty where
// no prediction was made (prefill chunks, lookahead off, sync reads, or a
// layer 0 that is itself MoE).
// Weights are written with 9 significant digits (enough to round-trip f32).
// Not here: choosing routes (model/ffn_layer), replaying them
// (runtime/cache_simulation).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "format/model_config.h"
#include "model/forward.h"

namespace waste::runtime {

class RouteLog {
public:
    // Creates (truncates) the file; WASTE_ERR_IO naming it on failure.
    explicit RouteLog(const std::string& path);
    ~RouteLog();
    RouteLog(const RouteLog&) = delete;
    RouteLog& operator=(const RouteLog&) = delete;

    // routes[t][layer] of a chunk whose first token sits at `position`.
    void write(const format::ModelConfig& config, uint32_t position,
               const std::vector<std::vector<model::RouteChoice>>& routes);
    const std::string& path() const { return path_; }

private:
    std::string path_;
    std::FILE* file_ = nullptr;
};

}  // namespace waste::runtime
