// serve_cgroup_test.cpp — the server's ceiling holds under a hostile mix:
// `waste serve` runs inside a memory cgroup whose hard limit is what `waste
// plan --parallel 1 --queue 8` says the server holds — the model's budget
// plus its request memory — plus the slack below, and 64 requests at once
// (max-size bodies to tokenize with pieces and to chat, JSON that expands
// when parsed, constrained replies, prompts near the context, streams whose
// client hangs up) are each answered 200, 400, 413 or 503; the server is
// never OOM-killed, its peak resident set stays within the plan, and SIGTERM
// ends it with exit 0.
//
// The slack, 16 MiB, is what the cgroup charges that is not the process's
// resident set (tests/budget_cgroup_test.cpp: kernel memory, page tables,
// a kernel stack per thread — the server has 17 + 2 connection threads
// more — and the kernel's socket buffers for 64 connections).
//
// Under a sanitizer the server's shadow memory is resident memory it never
// allocated: the release suite runs this (as budget_cgroup_test).
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "child_process.h"
#include "memory_cgroup.h"
#include "test_support.h"
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
// with hang_up, closes as soon as the first bytes of the answer arrive.
int exchange(uint16_t port, const std::string& path, const std::string& body, bool hang_up = false) {
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

TEST(ServeCgroup, TheServerHoldsItsPlanUnderAHostileMix) {
#ifdef WASTE_UNDER_SANITIZER
    GTEST_SKIP() << "a sanitizer's shadow memory is resident memory the server never allocated; the release suite runs this";
#endif
    waste_test::TempDir dir;
    const std::string model = (dir.path() / "model").string();
    waste_error error{};
    // Experts far bigger than the budget, as budget_cgroup_test's model.
    ASSERT_EQ(waste_synth(model.c_str(), "tiny", 11,
                          R"({"hidden_size": 512, "moe_intermediate_size": 1024, "num_experts": 64,
                              "num_experts_per_token": 4, "num_hidden_layers": 5})",
                          nullptr, nullptr, &error),
              WASTE_OK)
        << error.message;
    const std::vector<std::string> serve_flags = {"--ctx", "64", "--queue", "8", "--max-body", "1M", "--prompt-cache", "1M"};
    std::vector<std::string> plan_argv = {waste_test::cli_path().string(), "plan", model, "--parallel", "1", "--json"};
    plan_argv.insert(plan_argv.end(), serve_flags.begin(), serve_flags.end());
    const waste_test::ChildRun planned = waste_test::run_child(plan_argv);
    ASSERT_TRUE(planned.exited_ok()) << planned.describe();
    const json plan = json::parse(planned.output);
    const uint64_t budget = plan["floor_bytes"].get<uint64_t>() + plan["working_set_bytes"].get<uint64_t>();
    const uint64_t request_memory = plan["server"]["request_memory_bytes"].get<uint64_t>();
    ASSERT_EQ(request_memory, uint64_t{72} << 20) << "(1 + 8) x 8 MiB";
    ASSERT_GT(plan["all_experts_bytes"].get<uint64_t>(), budget) << "the experts must not fit the budget";

    std::string why;
    const auto group = waste_test::MemoryCgroup::create(budget + request_memory + slack_bytes, &why);
    if (!group) WASTE_SKIP_ENVIRONMENT("cgroup", why);

    const uint16_t port = free_port();
    const std::string pid_path = (dir.path() / "server.pid").string();
    std::vector<std::string> argv = {waste_test::cli_path().string(), "serve", model, "--port", std::to_string(port),
                                     "--budget", std::to_string(budget), "--threads", "2"};
    argv.insert(argv.end(), serve_flags.begin(), serve_flags.end());
    waste_test::ChildRun run;
    std::thread server([&] { run = waste_test::run_child(argv, {.cgroup_procs = group->procs_file(), .stdin_text = "", .pid_path = pid_path}); });

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

    // The mix, 64 at once.
    const std::string big_text = words((1 << 20) - 200);
    std::vector<std::pair<std::string, std::string>> requests;
    for (int i = 0; i < 16; ++i) requests.emplace_back("/tokenize", json{{"content", big_text}, {"with_pieces", true}}.dump());
    for (int i = 0; i < 16; ++i)
        requests.emplace_back("/v1/chat/completions", json{{"messages", {{{"role", "user"}, {"content", big_text}}}}, {"max_tokens", 4}}.dump());
    std::string zeros = R"({"content": "x", "padding": [)";
    while (zeros.size() < (1 << 20) - 16) zeros += "0,";
    zeros += "0]}";
    for (int i = 0; i < 8; ++i) requests.emplace_back("/tokenize", zeros);
    const json schema = {{"type", "object"}, {"properties", {{"n", {{"type", "integer"}}}}}, {"required", {"n"}}};
    for (int i = 0; i < 8; ++i)
        requests.emplace_back("/v1/chat/completions",
                              json{{"messages", {{{"role", "user"}, {"content", "a number"}}}}, {"max_tokens", 8}, {"temperature", 1},
                                   {"seed", i}, {"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "n"}, {"schema", schema}}}}}}
                                  .dump());
    for (int i = 0; i < 8; ++i)
        requests.emplace_back("/v1/chat/completions",
                              json{{"messages", {{{"role", "user"}, {"content", words(150 + 10 * i)}}}}, {"max_tokens", 16}}.dump());
    const size_t streams = 8;
    std::mutex mutex;
    std::map<int, int> statuses;
    std::vector<std::thread> clients;
    for (const auto& [path, body] : requests)
        clients.emplace_back([&, path = path, body = body] {
            const int status = exchange(port, path, body);
            std::lock_guard lock(mutex);
            ++statuses[status];
        });
    for (size_t i = 0; i < streams; ++i)
        clients.emplace_back([&, i] {
            exchange(port, "/v1/chat/completions",
                     json{{"messages", {{{"role", "user"}, {"content", words(40)}}}}, {"max_tokens", 48}, {"stream", true}, {"seed", i}}.dump(),
                     true);
        });
    for (auto& client : clients) client.join();
    const int health = exchange(port, "/health", "");
    if (pid > 0) kill(pid, SIGTERM);
    server.join();

    std::string seen;
    for (const auto& [status, count] : statuses) seen += std::to_string(status) + " x" + std::to_string(count) + "  ";
    std::printf("serve: cgroup v%d limit %llu (budget %llu + request memory %llu + slack %llu): peak RSS %llu, cgroup peak %llu, "
                "OOM kills %llu; answers %s\n",
                group->version(), static_cast<unsigned long long>(group->limit_bytes()), static_cast<unsigned long long>(budget),
                static_cast<unsigned long long>(request_memory), static_cast<unsigned long long>(slack_bytes),
                static_cast<unsigned long long>(run.peak_rss), static_cast<unsigned long long>(group->peak_bytes()),
                static_cast<unsigned long long>(group->oom_kills()), seen.c_str());
    EXPECT_EQ(group->oom_kills(), 0u) << run.describe();
    EXPECT_EQ(health, 200) << "the server still answers after the mix";
    for (const auto& [status, count] : statuses)
        EXPECT_TRUE(status == 200 || status == 400 || status == 413 || status == 503) << status << " x" << count << "\n" << run.output;
    EXPECT_GT(statuses[200], 0) << seen;
    ASSERT_TRUE(run.exited_ok()) << run.describe();
    EXPECT_LE(run.peak_rss, budget + request_memory) << run.output;
}

}  // namespace
