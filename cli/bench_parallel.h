// bench_parallel.h — `waste bench --parallel N`: N independent streams
// decoding together (waste_session_eval_batch) beside the same N decoding
// one at a time, in one process: aggregate and per-stream tok/s, the
// distinct experts each batched step looked up beside the union uniform
// routing predicts, and bytes read per generated token.
#pragma once

#include <cstdint>
#include <string>

#include "stream_options.h"

namespace waste_cli {

struct ParallelBench {
    std::string model;
    std::string budget;
    std::string policy = "default";
    unsigned threads = 0;
    int streams = 2;     // --parallel
    int prompt = 64;     // each stream's prompt (random ids, seed + stream)
    int tokens = 64;     // decode steps per stream per run
    int runs = 3;        // speeds are medians
    uint32_t seed = 1;
    bool warm = true;    // fill the expert cache first
    bool json_output = false;
    StreamArgs stream;
};

void run_parallel_bench(const ParallelBench& args);

}  // namespace waste_cli
