// test_support.h — paths and helpers the test executables share.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "waste/waste.h"

// Defined in a build with AddressSanitizer or ThreadSanitizer, whose shadow
// memory (and ASan's quarantine) is resident memory the engine never
// allocated (67 MB under ASan, 104 MB under TSan, against a 40 MB budget in
// tests/streaming_test.cpp): peak RSS is the engine's own only without them,
// so the release suite measures it.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define WASTE_UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define WASTE_UNDER_SANITIZER 1
#endif
#endif

namespace waste_test {

// The repository root, and ../shared beside it (CI lays it there read-only).
std::filesystem::path source_dir();
std::filesystem::path shared_dir();
std::filesystem::path fixture(const std::string& name);  // ../shared/fixtures/upstream/NAME
std::filesystem::path cli_path();

// A fresh temporary directory, removed when the object dies.
class TempDir {
public:
    TempDir();
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const std::filesystem::path& path() const { return path_; }
    std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

private:
    std::filesystem::path path_;
};

// Copies a container directory (files only) into dest and makes it writable.
void copy_container(const std::filesystem::path& from, const std::filesystem::path& dest);

// Runs a shell command, returns its exit status; stdout+stderr into *output.
int run_command(const std::string& command, std::string* output);

// A model and a session opened through the C API, closed when the object dies.
struct OpenedSession {
    waste_model* model = nullptr;
    waste_session* session = nullptr;
    OpenedSession() = default;
    OpenedSession(const OpenedSession&) = delete;
    OpenedSession& operator=(const OpenedSession&) = delete;
    ~OpenedSession() {
        waste_session_free(session);
        waste_model_close(model);
    }
};

// A synthetic Hugging Face checkpoint written by the PyTorch reference's
// writer (python/waste_ref/hf_synth.py, /usr/bin/python3): dir holds the
// shards, config and index; expected the f32 values it encoded. args are the
// writer's options (e.g. "--model k3 --experts-format int4"). A failed write
// is a test failure (EXPECT), and dir is then empty.
struct SynthCheckpoint {
    TempDir tmp;
    std::filesystem::path dir, expected;
};
std::unique_ptr<SynthCheckpoint> hf_synth(const std::string& args);

std::string read_file(const std::filesystem::path& path);
void write_file(const std::filesystem::path& path, const std::string& bytes);

}  // namespace waste_test
