// serve_cgroup_test.cpp — the server's ceiling holds under a hostile mix:
// `waste serve` runs inside a memory cgroup whose hard limit is what `waste
// plan --parallel 1 --queue 8` says the server holds — the model's budget
// plus its request memory — plus the slack below, and dozens of requests at
// once are each answered 200, 400, 413 or 503; the server is never
// OOM-killed, its peak resident set stays within the plan, and SIGTERM ends
// it with exit 0. Two mixes:
// * text: max-size bodies to tokenize with pieces and to chat, JSON that
//   expands when parsed, constrained replies, prompts near the context,
//   streams whose client hangs up;
// * images, on a server with the vision tower (--vision --image-dir):
//   decompression bombs (a PNG of 6000 x 6000 pixels in a ~100 KB body),
//   max-size BMP bodies, a local file over the request allowance, a FIFO, a
//   link out of the directory, a header claiming more pixels than allowed,
//   beside plain chats and streams that hang up.
//
// The slack, 16 MiB, is what the cgroup charges that is not the process's
// resident set (tests/budget_cgroup_test.cpp: kernel memory, page tables,
// a kernel stack per thread — the server has 17 + 2 connection threads
// more — and the kernel's socket buffers for 64 connections).
//
// Under a sanitizer the server's shadow memory is resident memory it never
// allocated: there the mixes run without the cgroup, for what the sanitizer
// finds in the server under them (its report fails the exit-0 check), and
// the release suite checks the ceiling (as budget_cgroup_test).
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <libdeflate.h>
#include <nlohmann/json.hpp>

#include "child_process.h"
#include "memory_cgroup.h"
#include "test_support.h"
#include "text/base64.h"
#include "waste/waste.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr uint64_t slack_bytes = uint64_t{16} << 20;

uint16_t free_port() {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
    socklen_t size = sizeof address;
    getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size);
    close(fd);
    return ntohs(address.sin_port);
}

// One request on its own connection: the response's status (0: none), or,
// with hang_up, closes as soon as the first bytes of the answer arrive; the
// whole answer into *whole when given.
int exchange(uint16_t port, const std::string& path, const std::string& body, bool hang_up = false, std::string* whole = nullptr) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    timeval timeout{300, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(port);
    if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
        close(fd);
        return 0;
    }
    const std::string request = (body.empty() ? "GET " : "POST ") + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" +
                                (body.empty() ? "" : "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n") +
                                "\r\n" + body;
    // A refusal before the body is read closes the connection: the rest of
    // the send fails, and the answer is still there to read.
    for (size_t sent = 0; sent < request.size();) {
        const ssize_t n = send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) break;
        sent += static_cast<size_t>(n);
    }
    std::string answer;
    char buffer[65536];
    for (;;) {
        const ssize_t n = recv(fd, buffer, sizeof buffer, 0);
        if (n <= 0) break;
        answer.append(buffer, static_cast<size_t>(n));
        if (hang_up) break;
    }
    close(fd);
    if (whole) *whole = answer;
    if (answer.compare(0, 9, "HTTP/1.1 ") != 0 || answer.size() < 12) return 0;
    return std::stoi(answer.substr(9, 3));
}

std::string words(size_t bytes) {
    static const char* list[] = {"stream ", "expert ", "budget ", "cache ", "token ", "layer ", "the "};
    std::string text;
    for (size_t i = 0; text.size() < bytes; ++i) text += list[(i * 7 + (i >> 3)) % 7];
    text.resize(bytes);
    return text;
}

// One request of a mix: where it goes, its body, the answers it may get,
// and what names it in a failure.
struct Request {
    std::string path, body;
    std::set<int> allowed = {200, 400, 413, 503};  // any answer of a loaded server
    std::string label;
};
using Requests = std::vector<Request>;

// The server under test: its model, the flags `waste plan` and `waste serve`
// share, those only serve takes, and the request memory the plan must show.
struct ServerUnderTest {
    std::string model;
    std::vector<std::string> shared_flags;
    std::vector<std::string> serve_only_flags;
    uint64_t request_memory = 0;
    bool experts_exceed_budget = true;  // the plan streams (checked)
    // A 503 (busy) is tried again every 100 ms for up to 2 minutes, as a
    // client honouring Retry-After does, so every request reaches the
    // server's checks; otherwise a 503 is an answer.
    bool retry_busy = false;
};

// Starts the server (inside the cgroup of its plan, except under a
// sanitizer), sends every request and `streams` (each a hang-up after the
// first bytes) at once, then SIGTERM; checks each answer against what its
// request allows, and the ceiling.
void serve_the_mix(const waste_test::TempDir& dir, const ServerUnderTest& under_test, const Requests& requests,
                   const std::vector<std::string>& streams) {
    std::vector<std::string> plan_argv = {waste_test::cli_path().string(), "plan", under_test.model, "--parallel", "1", "--json"};
    plan_argv.insert(plan_argv.end(), under_test.shared_flags.begin(), under_test.shared_flags.end());
    const waste_test::ChildRun planned = waste_test::run_child(plan_argv);
    ASSERT_TRUE(planned.exited_ok()) << planned.describe();
    const json plan = json::parse(planned.output);
    const uint64_t budget = plan["floor_bytes"].get<uint64_t>() + plan["working_set_bytes"].get<uint64_t>();
    const uint64_t request_memory = plan["server"]["request_memory_bytes"].get<uint64_t>();
    ASSERT_EQ(request_memory, under_test.request_memory);
    if (under_test.experts_exceed_budget) {
        ASSERT_GT(plan["all_experts_bytes"].get<uint64_t>(), budget) << "the experts must not fit the budget";
    }

    std::unique_ptr<waste_test::MemoryCgroup> group;
#ifndef WASTE_UNDER_SANITIZER
    std::string why;
    group = waste_test::MemoryCgroup::create(budget + request_memory + slack_bytes, &why);
    if (!group) WASTE_SKIP_ENVIRONMENT("cgroup", why);
#endif

    const uint16_t port = free_port();
    const std::string pid_path = (dir.path() / "server.pid").string();
    std::filesystem::remove(pid_path);
    std::vector<std::string> argv = {waste_test::cli_path().string(), "serve", under_test.model, "--port", std::to_string(port),
                                     "--budget", std::to_string(budget), "--threads", "2"};
    argv.insert(argv.end(), under_test.shared_flags.begin(), under_test.shared_flags.end());
    argv.insert(argv.end(), under_test.serve_only_flags.begin(), under_test.serve_only_flags.end());
    waste_test::ChildRun run;
    std::thread server([&] {
        run = waste_test::run_child(argv, {.cgroup_procs = group ? group->procs_file() : "", .stdin_text = "", .pid_path = pid_path});
    });

    bool ready = false;
    for (int i = 0; i < 600 && !ready; ++i) {
        ready = exchange(port, "/health", "") == 200;
        if (!ready) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    pid_t pid = 0;
    if (fs::exists(pid_path)) pid = std::stoi(waste_test::read_file(pid_path));
    if (!ready) {
        if (pid > 0) kill(pid, SIGKILL);
        server.join();
        FAIL() << "the server did not answer /health within 60 s:\n" << run.describe();
    }

    std::mutex mutex;
    std::map<int, int> statuses;
    std::vector<std::string> unexpected;
    std::vector<std::thread> clients;
    for (const Request& request : requests)
        clients.emplace_back([&, request] {
            std::string answer;
            int status = exchange(port, request.path, request.body, false, &answer);
            for (int tries = 1; under_test.retry_busy && status == 503 && tries < 1200; ++tries) {
                std::this_thread::sleep_for(std::chrono::milliseconds(100));
                status = exchange(port, request.path, request.body, false, &answer);
            }
            std::lock_guard lock(mutex);
            ++statuses[status];
            if (!request.allowed.count(status)) {
                const size_t body_at = answer.find("\r\n\r\n");
                unexpected.push_back(request.label + ": " + std::to_string(status) + " " +
                                     (body_at == std::string::npos ? answer : answer.substr(body_at + 4)).substr(0, 400));
            }
        });
    for (const std::string& body : streams)
        clients.emplace_back([&, body = body] { exchange(port, "/v1/chat/completions", body, true); });
    for (auto& client : clients) client.join();
    const int health = exchange(port, "/health", "");
    if (pid > 0) kill(pid, SIGTERM);
    server.join();

    std::string seen;
    for (const auto& [status, count] : statuses) seen += std::to_string(status) + " x" + std::to_string(count) + "  ";
    if (group)
        std::printf("serve: cgroup v%d limit %llu (budget %llu + request memory %llu + slack %llu): peak RSS %llu, cgroup peak %llu, "
                    "OOM kills %llu; answers %s\n",
                    group->version(), static_cast<unsigned long long>(group->limit_bytes()), static_cast<unsigned long long>(budget),
                    static_cast<unsigned long long>(request_memory), static_cast<unsigned long long>(slack_bytes),
                    static_cast<unsigned long long>(run.peak_rss), static_cast<unsigned long long>(group->peak_bytes()),
                    static_cast<unsigned long long>(group->oom_kills()), seen.c_str());
    else
        std::printf("serve: under a sanitizer, no cgroup (its shadow memory is not the server's): answers %s\n", seen.c_str());
    EXPECT_EQ(health, 200) << "the server still answers after the mix";
    for (const std::string& answer : unexpected) ADD_FAILURE() << "unexpected answer, " << answer;
    if (!unexpected.empty()) ADD_FAILURE() << run.output;
    EXPECT_GT(statuses[200], 0) << seen;
    ASSERT_TRUE(run.exited_ok()) << run.describe();
    if (group) {
        EXPECT_EQ(group->oom_kills(), 0u) << run.describe();
        EXPECT_LE(run.peak_rss, budget + request_memory) << run.output;
    }
}

std::string synth_model(const waste_test::TempDir& dir, const char* preset, const char* overrides) {
    const std::string model = (dir.path() / "model").string();
    waste_error error{};
    EXPECT_EQ(waste_synth(model.c_str(), preset, 11, overrides, nullptr, nullptr, &error), WASTE_OK) << error.message;
    return model;
}

TEST(ServeCgroup, TheServerHoldsItsPlanUnderAHostileMix) {
    waste_test::TempDir dir;
    ServerUnderTest under_test;
    // Experts far bigger than the budget, as budget_cgroup_test's model.
    under_test.model = synth_model(dir, "tiny", R"({"hidden_size": 512, "moe_intermediate_size": 1024, "num_experts": 64,
                                                  "num_experts_per_token": 4, "num_hidden_layers": 5})");
    ASSERT_FALSE(testing::Test::HasFailure());
    under_test.shared_flags = {"--ctx", "64", "--queue", "8", "--max-body", "1M", "--prompt-cache", "1M"};
    under_test.request_memory = uint64_t{72} << 20;  // (1 + 8) x 8 MiB

    const std::string big_text = words((1 << 20) - 200);
    Requests requests;
    for (int i = 0; i < 16; ++i)
        requests.push_back({"/tokenize", json{{"content", big_text}, {"with_pieces", true}}.dump(), {200, 413, 503}, "tokenize with pieces"});
    for (int i = 0; i < 16; ++i)
        requests.push_back({"/v1/chat/completions", json{{"messages", {{{"role", "user"}, {"content", big_text}}}}, {"max_tokens", 4}}.dump(),
                            {400, 413, 503}, "a chat past the context"});
    std::string zeros = R"({"content": "x", "padding": [)";
    while (zeros.size() < (1 << 20) - 16) zeros += "0,";
    zeros += "0]}";
    for (int i = 0; i < 8; ++i) requests.push_back({"/tokenize", zeros, {200, 413, 503}, "JSON that expands when parsed"});
    const json schema = {{"type", "object"}, {"properties", {{"n", {{"type", "integer"}}}}}, {"required", {"n"}}};
    for (int i = 0; i < 8; ++i)
        requests.push_back({"/v1/chat/completions",
                            json{{"messages", {{{"role", "user"}, {"content", "a number"}}}}, {"max_tokens", 8}, {"temperature", 1},
                                 {"seed", i}, {"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "n"}, {"schema", schema}}}}}}
                                .dump(),
                            {200, 400, 503}, "a constrained reply"});  // 400: its schema's instructions pass --ctx 64
    for (int i = 0; i < 8; ++i)
        requests.push_back({"/v1/chat/completions",
                            json{{"messages", {{{"role", "user"}, {"content", words(150 + 10 * i)}}}}, {"max_tokens", 16}}.dump(),
                            {200, 400, 503}, "a prompt near the context"});
    std::vector<std::string> streams;
    for (int i = 0; i < 8; ++i)
        streams.push_back(json{{"messages", {{{"role", "user"}, {"content", words(40)}}}}, {"max_tokens", 48}, {"stream", true}, {"seed", i}}.dump());
    serve_the_mix(dir, under_test, requests, streams);
}

// A 24-bit BMP of seeded pixels (bottom-up rows padded to 4 bytes).
std::string bmp(uint32_t width, uint32_t height, uint32_t seed) {
    const uint32_t stride = (width * 3 + 3) / 4 * 4;
    std::string b(54 + size_t{stride} * height, '\0');
    const auto put32 = [&](size_t at, uint32_t v) { std::memcpy(b.data() + at, &v, 4); };
    const auto put16 = [&](size_t at, uint16_t v) { std::memcpy(b.data() + at, &v, 2); };
    b[0] = 'B', b[1] = 'M';
    put32(2, static_cast<uint32_t>(b.size()));
    put32(10, 54);
    put32(14, 40);
    put32(18, width);
    put32(22, height);
    put16(26, 1);
    put16(28, 24);
    put32(34, stride * height);
    uint32_t x = seed;
    for (uint32_t y = 0; y < height; ++y)
        for (uint32_t i = 0; i < width * 3; ++i) {
            x = x * 1103515245u + 12345u;
            b[54 + size_t{y} * stride + i] = static_cast<char>(x >> 24);
        }
    return b;
}

// A black RGB PNG of width x height: its pixels compress ~1000:1, so a
// body of ~100 KB decodes to 3 bytes a pixel (a decompression bomb within
// the decoder's pixel bound).
std::string black_png(uint32_t width, uint32_t height) {
    const std::vector<uint8_t> rows((size_t{width} * 3 + 1) * height, 0);  // filter byte 0, then black pixels
    libdeflate_compressor* compressor = libdeflate_alloc_compressor(9);
    std::string packed(libdeflate_zlib_compress_bound(compressor, rows.size()), '\0');
    packed.resize(libdeflate_zlib_compress(compressor, rows.data(), rows.size(), packed.data(), packed.size()));
    libdeflate_free_compressor(compressor);
    const auto be32 = [](uint32_t v) {
        return std::string{static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8), static_cast<char>(v)};
    };
    const auto chunk = [&](const std::string& type, const std::string& data) {
        const std::string typed = type + data;
        return be32(static_cast<uint32_t>(data.size())) + typed + be32(libdeflate_crc32(0, typed.data(), typed.size()));
    };
    const std::string header = be32(width) + be32(height) + std::string{8, 2, 0, 0, 0};  // 8-bit RGB, no interlace
    return std::string("\x89PNG\r\n\x1a\n", 8) + chunk("IHDR", header) + chunk("IDAT", packed) + chunk("IEND", "");
}

std::string image_chat(const std::string& url, bool stream = false) {
    return json{{"messages", {{{"role", "user"}, {"content", {{{"type", "text"}, {"text", "what is in the picture"}},
                                                               {{"type", "image_url"}, {"image_url", {{"url", url}}}}}}}}},
                {"max_tokens", 4}, {"stream", stream}}
        .dump();
}

TEST(ServeCgroup, TheVisionServerHoldsItsPlanUnderHostileImages) {
    waste_test::TempDir dir;
    ServerUnderTest under_test;
    // synth's tiny tower; its experts fit the budget, which the decoder's
    // reserve dominates (one image of the largest size, decoded).
    under_test.model = synth_model(dir, "tiny-k3", R"({"vision": true})");
    under_test.experts_exceed_budget = false;
    under_test.retry_busy = true;  // each image reaches the decoder or its refusal
    ASSERT_FALSE(testing::Test::HasFailure());
    const fs::path images = dir.path() / "images";
    fs::create_directories(images);
    under_test.shared_flags = {"--vision", "--ctx", "256", "--queue", "8", "--max-body", "1M", "--prompt-cache", "1M"};
    under_test.serve_only_flags = {"--image-dir", images.string()};
    under_test.request_memory = uint64_t{72} << 20;  // (1 + 8) x 8 MiB

    waste_test::write_file(images / "small.bmp", bmp(100, 60, 1));
    waste_test::write_file(images / "huge.bmp", bmp(4000, 4000, 2));  // 48 MB: more than half the pool (the bytes and a copy)
    waste_test::write_file(dir.path() / "secret.bmp", bmp(40, 40, 3));
    fs::create_symlink(dir.path() / "secret.bmp", images / "link.bmp");
    ASSERT_EQ(mkfifo((images / "pipe.bmp").c_str(), 0600), 0) << std::strerror(errno);
    std::string claims_too_much = bmp(16, 16, 4);  // a header of 10,000 x 10,000 pixels (over 64 Mi) over 16 x 16 of data
    const uint32_t side = 10000;
    std::memcpy(claims_too_much.data() + 18, &side, 4);
    std::memcpy(claims_too_much.data() + 22, &side, 4);

    const std::string bomb = "data:image/png;base64," + waste::text::encode_base64(black_png(6000, 6000));
    const std::string biggest_bmp = "data:image/bmp;base64," + waste::text::encode_base64(bmp(420, 580, 5));  // ~730 KB, ~975 KB as base64
    Requests requests;
    const std::string chat = "/v1/chat/completions";
    for (int i = 0; i < 8; ++i) requests.push_back({chat, image_chat(bomb), {200}, "a PNG of 6000 x 6000 black pixels"});
    for (int i = 0; i < 8; ++i) requests.push_back({chat, image_chat(biggest_bmp), {200}, "a BMP body of ~1 MB"});
    for (int i = 0; i < 4; ++i) requests.push_back({chat, image_chat("small.bmp"), {200}, "a local image"});
    for (int i = 0; i < 4; ++i) requests.push_back({chat, image_chat("huge.bmp"), {400}, "a local image larger than a request may hold"});
    for (const char* file : {"link.bmp", "pipe.bmp", "../secret.bmp"})
        for (int i = 0; i < 4; ++i) requests.push_back({chat, image_chat(file), {400}, file});
    for (int i = 0; i < 4; ++i)
        requests.push_back(
            {chat, image_chat("data:image/bmp;base64," + waste::text::encode_base64(claims_too_much)), {400}, "a header of 10,000 x 10,000"});
    for (int i = 0; i < 8; ++i)
        requests.push_back({chat, json{{"messages", {{{"role", "user"}, {"content", words(100 + 10 * i)}}}}, {"max_tokens", 8}}.dump(), {200},
                            "a plain chat"});
    std::vector<std::string> streams;
    for (int i = 0; i < 8; ++i) streams.push_back(image_chat(i % 2 ? "small.bmp" : bomb, true));
    serve_the_mix(dir, under_test, requests, streams);
}

}  // namespace
