// test_support.h — paths and helpers the test executables share.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

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
// How to start a target executable from a shell command: "" natively; in a
// cross build the emulator's shell-quoted words and a space (the CLI itself
// is already wrapped: cli_path() is a script that runs it emulated).
std::string emulator_prefix();
// Whether the target executables run under an emulator (qemu-user): a
// child's peak RSS is then the emulator's own, its translator included.
bool emulated();

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

// The memory plan's floor for the model at `path` and a context length: the
// smallest budget, at which every token reads experts from disk.
uint64_t floor_bytes(const std::string& path, uint32_t context);

// A model opened for streaming through the C API (budget, I/O backend,
// compute threads; no hotlist) with one session; status and message say why
// not (then session is null).
struct StreamingSession : OpenedSession {
    waste_status status = WASTE_OK;
    std::string message;
    StreamingSession(const std::string& path, uint32_t context, uint64_t budget, uint32_t io, unsigned threads);
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

// A tmpfs of a few KiB mounted on a fresh directory, so that writers meet a
// real ENOSPC; unmounted (lazily) when the object dies. Mounting needs root
// (CAP_SYS_ADMIN); where it is refused, mounted() is false and why() says
// so, and the tests that need it skip with that message.
class SmallFilesystem {
public:
    explicit SmallFilesystem(uint64_t bytes);
    ~SmallFilesystem();
    SmallFilesystem(const SmallFilesystem&) = delete;
    SmallFilesystem& operator=(const SmallFilesystem&) = delete;
    bool mounted() const { return mounted_; }
    const std::string& why() const { return why_; }
    const std::filesystem::path& path() const { return dir_.path(); }
    std::filesystem::path operator/(const std::string& name) const { return path() / name; }
    // Remounts with a new size, keeping the files ("space freed").
    void resize(uint64_t bytes);
    // Takes every free byte with a file "filler" (written until ENOSPC), or frees it again.
    void fill();
    void unfill();
    uint64_t free_bytes() const;

private:
    TempDir dir_;
    bool mounted_ = false;
    std::string why_;
};

// The regular files directly in dir (not in its subfolders, such as the
// converter's work folder), name -> bytes.
std::map<std::string, std::string> container_files(const std::filesystem::path& dir);

// Regular files under dir (recursively) whose name ends in ".tmp".
std::vector<std::string> tmp_files_under(const std::filesystem::path& dir);

// A greedy generation from a fresh start: the session is reset, the prompt
// evaluated, then `steps` tokens chosen by argmax. logits holds the logits
// after the prompt and after each step, concatenated; on the first failing
// call status and message say why (and logits end there).
struct Generation {
    waste_status status = WASTE_OK;
    std::string message;
    std::vector<float> logits;
};
Generation greedy_generation(waste_session* session, const std::vector<int32_t>& prompt, int steps);

// A tokenizer of `vocab` ids through the C API (163,840: K3's size): the
// tokenizer of a tiny synthetic model written with that vocabulary, opened
// with `grammars` grammar slots in its plan (waste_open_options.grammars).
struct SynthTokenizer {
    TempDir dir;
    waste_model* model = nullptr;
    waste_tokenizer* tokenizer = nullptr;
    SynthTokenizer() = default;
    SynthTokenizer(const SynthTokenizer&) = delete;
    SynthTokenizer& operator=(const SynthTokenizer&) = delete;
    ~SynthTokenizer();
};
void open_synth_tokenizer(SynthTokenizer& out, uint32_t vocab, uint32_t grammars);

// Whether WASTE_REQUIRE_ORACLES is set (to anything but "" or "0"), as
// scripts/test.sh does: then a missing differential oracle is a failure,
// not a skip.
bool oracles_required();
// Skips the test saying `missing` when !installed, or fails it when oracles
// are required.
#define WASTE_REQUIRE_ORACLE(installed, missing)                                          \
    do {                                                                                  \
        if (!(installed)) {                                                               \
            if (::waste_test::oracles_required()) FAIL() << missing << " (WASTE_REQUIRE_ORACLES is set)"; \
            GTEST_SKIP() << missing;                                                      \
        }                                                                                 \
    } while (0)

// A check this machine cannot run (kind: "cgroup", no writable memory
// cgroup; "io_uring", refused; "tmpfs", no mount for the small filesystem;
// "o_direct", refused by the filesystem). Under scripts/test.sh
// (WASTE_REQUIRE_ORACLES set) that is a failure unless the comma list
// $WASTE_ALLOW_SKIP names the kind — an environment that says so
// explicitly (the emulated stages, for what their emulator lacks); elsewhere
// (a developer's ctest) a skip. Either way the message says why.
bool environment_skip_allowed(const std::string& kind);
#define WASTE_SKIP_ENVIRONMENT(kind, why)                                                                          \
    do {                                                                                                          \
        if (!::waste_test::environment_skip_allowed(kind))                                                       \
            FAIL() << "cannot run here (" << (kind) << "): " << why                                               \
                   << " — a test that cannot run its check fails under scripts/test.sh; WASTE_ALLOW_SKIP="       \
                   << (kind) << " lets it skip";                                                                  \
        GTEST_SKIP() << "(" << (kind) << ") " << why;                                                             \
    } while (0)

// The status a library call throws (WASTE_OK when none), its message into
// *message.
waste_status status_of(const std::function<void()>& body, std::string* message = nullptr);

std::string read_file(const std::filesystem::path& path);
void write_file(const std::filesystem::path& path, const std::string& bytes);

// The session's next-token logits, copied (a failure is a test failure and
// gives an empty vector).
std::vector<float> session_logits(const waste_session* session);

}  // namespace waste_test
