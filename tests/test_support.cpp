#include "test_support.h"

#include "platform/error.h"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#if !defined(_WIN32)
#include <sys/wait.h>
#endif

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

namespace fs = std::filesystem;

namespace waste_test {

fs::path source_dir() { return fs::path(WASTE_SOURCE_DIR); }
fs::path shared_dir() { return source_dir().parent_path() / "shared"; }
fs::path fixture(const std::string& name) { return shared_dir() / "fixtures" / "upstream" / name; }
fs::path cli_path() { return fs::path(WASTE_CLI_PATH); }
std::string emulator_prefix() { return emulated() ? std::string(WASTE_TEST_EMULATOR) + " " : std::string(); }
bool emulated() { return std::string(WASTE_TEST_EMULATOR) != ""; }

TempDir::TempDir() {
    std::random_device random;
    const fs::path base = fs::temp_directory_path();
    for (int attempt = 0; attempt < 100; ++attempt) {
        fs::path candidate = base / ("waste-test-" + std::to_string(random()));
        if (fs::create_directory(candidate)) {
            path_ = candidate;
            return;
        }
    }
    throw std::runtime_error("cannot create a temporary directory");
}

TempDir::~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
}

void copy_container(const fs::path& from, const fs::path& dest) {
    fs::create_directories(dest);
    for (const auto& entry : fs::directory_iterator(from)) {
        fs::path target = dest / entry.path().filename();
        fs::copy_file(entry.path(), target, fs::copy_options::overwrite_existing);
        fs::permissions(target, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::add);
    }
}

std::unique_ptr<SynthCheckpoint> hf_synth(const std::string& args) {
    auto s = std::make_unique<SynthCheckpoint>();
    s->dir = s->tmp / "ckpt";
    s->expected = s->tmp / "expected.safetensors";
    const std::string command = "cd '" + (source_dir() / "python").string() +
                                "' && /usr/bin/python3 -m waste_ref.hf_synth '" + s->dir.string() + "' " + args +
                                " --expected-f32 '" + s->expected.string() + "'";
    std::string output;
    const int rc = run_command(command, &output);
    EXPECT_EQ(rc, 0) << command << "\n" << output;
    return s;
}

int run_command(const std::string& command, std::string* output) {
#if defined(_WIN32)
    // cmd.exe runs it; _pclose returns the exit code itself.
    FILE* pipe = ::_popen((command + " 2>&1").c_str(), "rb");
#else
    FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
#endif
    if (!pipe) return -1;
    std::string text;
    char buffer[4096];
    size_t got;
    while ((got = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) text.append(buffer, got);
    if (output) *output = text;
#if defined(_WIN32)
    return ::_pclose(pipe);
#else
    const int status = ::pclose(pipe);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
#endif
}

std::map<std::string, std::string> container_files(const fs::path& dir) {
    std::map<std::string, std::string> files;
    for (const auto& entry : fs::directory_iterator(dir))
        if (entry.is_regular_file()) files[entry.path().filename().string()] = read_file(entry.path());
    return files;
}

std::vector<std::string> tmp_files_under(const fs::path& dir) {
    std::vector<std::string> found;
    std::error_code error;
    for (const auto& entry : fs::recursive_directory_iterator(dir, error))
        if (entry.path().filename().string().ends_with(".tmp")) found.push_back(entry.path().string());
    return found;
}

uint64_t floor_bytes(const std::string& path, uint32_t context) {
    waste_open_options options;
    waste_open_options_init(&options);
    options.flags = WASTE_OPEN_METADATA_ONLY;
    options.context_length = context;
    OpenedSession opened;
    waste_error error{};
    EXPECT_EQ(waste_model_open(path.c_str(), &options, &opened.model, &error), WASTE_OK) << error.message;
    if (!opened.model) return 0;
    waste_plan_options plan{context, 0};
    char* text = nullptr;
    EXPECT_EQ(waste_model_plan_json(opened.model, &plan, &text, &error), WASTE_OK) << error.message;
    if (!text) return 0;
    const uint64_t floor = nlohmann::json::parse(text)["floor_bytes"].get<uint64_t>();
    waste_string_free(text);
    return floor;
}

StreamingSession::StreamingSession(const std::string& path, uint32_t context, uint64_t budget, uint32_t io,
                                   unsigned threads) {
    waste_open_options options;
    waste_open_options_init(&options);
    options.context_length = context;
    options.threads = threads;
    options.budget_bytes = budget;
    options.io_backend = io;
    options.flags = WASTE_OPEN_NO_HOTLIST;
    waste_error error{};
    status = waste_model_open(path.c_str(), &options, &model, &error);
    message = error.message;
    if (status != WASTE_OK) return;
    EXPECT_EQ(waste_session_create(model, &session, &error), WASTE_OK) << error.message;
}

Generation greedy_generation(waste_session* session, const std::vector<int32_t>& prompt, int steps) {
    Generation g;
    waste_error error{};
    EXPECT_EQ(waste_session_reset(session, &error), WASTE_OK) << error.message;
    g.status = waste_session_eval(session, prompt.data(), prompt.size(), &error);
    for (int step = 0; g.status == WASTE_OK; ++step) {
        const float* logits = nullptr;
        size_t vocab = 0;
        EXPECT_EQ(waste_session_logits(session, &logits, &vocab, &error), WASTE_OK) << error.message;
        g.logits.insert(g.logits.end(), logits, logits + vocab);
        if (step == steps) break;
        const int32_t next = static_cast<int32_t>(std::max_element(logits, logits + vocab) - logits);
        g.status = waste_session_eval(session, &next, 1, &error);
    }
    if (g.status != WASTE_OK) g.message = error.message;
    return g;
}

std::string read_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
}

void write_file(const fs::path& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

SynthTokenizer::~SynthTokenizer() {
    waste_tokenizer_free(tokenizer);
    waste_model_close(model);
}

void open_synth_tokenizer(SynthTokenizer& out, uint32_t vocab, uint32_t grammars) {
    waste_error error{};
    const std::string overrides = "{\"vocab_size\": " + std::to_string(vocab) + "}";
    ASSERT_EQ(waste_synth((out.dir / "synth").string().c_str(), "tiny", 1, overrides.c_str(), nullptr, nullptr, &error), WASTE_OK)
        << error.message;
    waste_open_options options;
    waste_open_options_init(&options);
    options.context_length = 64;
    options.threads = 1;
    options.grammars = grammars;
    ASSERT_EQ(waste_model_open((out.dir / "synth").string().c_str(), &options, &out.model, &error), WASTE_OK) << error.message;
    ASSERT_EQ(waste_model_tokenizer(out.model, nullptr, &out.tokenizer, &error), WASTE_OK) << error.message;
}

bool oracles_required() {
    const char* value = std::getenv("WASTE_REQUIRE_ORACLES");
    return value != nullptr && *value != '\0' && std::string(value) != "0";
}

bool environment_skip_allowed(const std::string& kind) {
    if (!oracles_required()) return true;
    const char* allowed = std::getenv("WASTE_ALLOW_SKIP");
    if (!allowed) return false;
    const std::string list = std::string(",") + allowed + ",";
    return list.find("," + kind + ",") != std::string::npos;
}

waste_status status_of(const std::function<void()>& body, std::string* message) {
    try {
        body();
    } catch (const waste::Error& e) {
        if (message) *message = e.what();
        return e.status();
    }
    return WASTE_OK;
}

std::vector<float> session_logits(const waste_session* session) {
    const float* logits = nullptr;
    size_t vocab = 0;
    waste_error error{};
    EXPECT_EQ(waste_session_logits(session, &logits, &vocab, &error), WASTE_OK) << error.message;
    return logits ? std::vector<float>(logits, logits + vocab) : std::vector<float>{};
}

}  // namespace waste_test
