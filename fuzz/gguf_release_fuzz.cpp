// gguf_release_fuzz.cpp — libFuzzer target over a GGUF read as the
// converter's source (convert/gguf_source.h): its keys as config.json, its
// vocabulary as tokenizer.json (checked by the engine's own reader), the
// tensors bound under the release's names (experts sliced from their 3-D
// stacks, MLA's kv_b_proj rebuilt, gpt-oss's biases re-interleaved).
//
// The input is a whole GGUF file, written to a file of this process (the
// source reads a path). Only waste::Error may come out. When it opens, the
// first and last rows of every tensor of at most 4,096 columns are read:
// whatever the keys and shapes say, a read stays inside the bytes the file
// holds (AddressSanitizer watches the buffers).
// Seeds: fuzz/seeds/gguf_release_fuzz/, one small file of each architecture
// read (`python -m waste_ref.gguf_fuzz_seeds DIR` writes them).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "convert/gguf_source.h"
#include "platform/error.h"

namespace {

const std::string& input_path() {
    static const std::string path = [] {
        const char* dir = std::getenv("TMPDIR");
        return std::string(dir && *dir ? dir : "/tmp") + "/gguf_release_fuzz-" + std::to_string(getpid()) + ".gguf";
    }();
    return path;
}

void remove_input() { std::remove(input_path().c_str()); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const bool cleanup = [] { return std::atexit(remove_input) == 0; }();
    (void)cleanup;
    {
        std::ofstream out(input_path(), std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
        if (!out) __builtin_trap();  // the harness's own disk, not the input
    }
    try {
        const waste::convert::GgufRelease release = waste::convert::open_gguf_release(input_path());
        std::vector<float> row;
        for (const std::string& name : release.weights->names()) {
            const waste::convert::SourceTensor info = release.weights->info(name);
            if (info.shape.empty()) continue;
            const int64_t cols = info.shape.back();
            int64_t rows = 1;
            for (size_t d = 0; d + 1 < info.shape.size(); ++d) rows *= info.shape[d];
            if (cols <= 0 || cols > 4096 || rows <= 0) continue;
            row.resize(static_cast<size_t>(cols));
            release.weights->read_rows(name, 0, 1, row);
            release.weights->read_rows(name, static_cast<uint64_t>(rows - 1), 1, row);
        }
    } catch (const waste::Error&) {
    }
    return 0;
}
