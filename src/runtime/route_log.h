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
// The lines go to FILE.tmp and are published by finish() (the caller's
// stop) through platform/output_file, like every file the library writes:
// a full disk leaves no truncated trace and an older FILE as it was.
// Not here: choosing routes (model/ffn_layer), replaying them
// (runtime/cache_simulation).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "format/model_config.h"
#include "model/forward.h"

namespace waste::platform {
class OutputFile;
}

namespace waste::runtime {

class RouteLog {
public:
    // Creates (truncates) path.tmp; WASTE_ERR_IO naming it on failure.
    explicit RouteLog(const std::string& path);
    // Publishes what was written if finish() was not called, without a way
    // to report a failure (then the temporary is removed): call finish().
    ~RouteLog();
    RouteLog(const RouteLog&) = delete;
    RouteLog& operator=(const RouteLog&) = delete;

    // routes[t][layer] of a chunk whose first token sits at `position`.
    void write(const format::ModelConfig& config, uint32_t position,
               const std::vector<std::vector<model::RouteChoice>>& routes);
    // Flushes, fsyncs and renames path.tmp over path. WASTE_ERR_IO naming
    // the file if any write failed (nothing is then published). Once only.
    void finish();
    const std::string& path() const { return path_; }

private:
    std::string path_;
    std::unique_ptr<platform::OutputFile> file_;  // null once finish() was called
};

}  // namespace waste::runtime
