// budget_cgroup_test.cpp — the budget is a ceiling for every command: each
// `waste` command that opens a model runs inside a memory cgroup whose hard
// limit is the budget plus a small slack, the way a user's container would
// hold it, and must finish (exit 0) without the kernel's OOM killer. Its
// peak resident set is also held to the budget itself.
//
// The slack, 8 MiB, is what the cgroup charges that is not the process's
// resident set and that the plan does not claim to bound: kernel memory
// (page tables, a 16 KiB kernel stack per thread, io_uring's rings, slab for
// the files it opens). The page cache of the files it reads buffered (the
// trunk, the tokenizer) is charged too, but the kernel reclaims it at the
// limit rather than kill. Measured on the development VM (2026-12-01,
// cgroup v1): `waste bench --budget 232M` on a `mid` container charged at
// most 0.67 MB of kernel memory (memory.kmem.max_usage_in_bytes).
//
// The container is written by this process before any child runs, so its
// page cache is charged to the test's cgroup, not to the children's.
//
// Under a sanitizer the CLI's shadow memory is resident memory the
// engine never allocated, so the suite runs in the release build only.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "child_process.h"
#include "memory_cgroup.h"
#include "test_support.h"
#include "waste/waste.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;


constexpr uint64_t slack_bytes = uint64_t{8} << 20;
constexpr uint32_t context = 64;

// Experts far bigger than the budget (hidden 512, 64 experts of 1024 rows in
// 4 MoE layers: ~150 MB of records), with a tokenizer for the text commands.
struct Model {
    waste_test::TempDir dir;
    std::string path;
    uint64_t budget = 0;       // the plan's floor at `context` plus one token's experts
    uint64_t experts = 0;
    uint64_t grammar_reserve = 0;  // what one grammar slot adds to the floor (run --json-value)
};

const Model& model() {
    static std::unique_ptr<Model> m = [] {
        auto made = std::make_unique<Model>();
        made->path = (made->dir.path() / "model").string();
        waste_error error{};
        EXPECT_EQ(waste_synth(made->path.c_str(), "tiny", 11,
                              R"({"hidden_size": 512, "moe_intermediate_size": 1024, "num_experts": 64,
                                  "num_experts_per_token": 4, "num_hidden_layers": 5})",
                              nullptr, nullptr, &error),
                  WASTE_OK)
            << error.message;
        auto plan_with = [&](uint32_t grammars) {
            waste_open_options options;
            waste_open_options_init(&options);
            options.flags = WASTE_OPEN_METADATA_ONLY;
            options.grammars = grammars;
            waste_model* opened = nullptr;
            EXPECT_EQ(waste_model_open(made->path.c_str(), &options, &opened, &error), WASTE_OK) << error.message;
            waste_plan_options plan_options{context, 0};
            char* text = nullptr;
            EXPECT_EQ(waste_model_plan_json(opened, &plan_options, &text, &error), WASTE_OK) << error.message;
            const json plan = json::parse(text ? text : "{}");
            waste_string_free(text);
            waste_model_close(opened);
            return plan;
        };
        const json plan = plan_with(0);
        made->grammar_reserve = plan_with(1).value("grammar_bytes", uint64_t{0});
        made->budget = plan.value("floor_bytes", uint64_t{0}) + plan.value("working_set_bytes", uint64_t{0});
        made->experts = plan.value("all_experts_bytes", uint64_t{0});
        // a token stream for perplexity: 40 little-endian u16 ids
        std::string tokens;
        for (int i = 0; i < 40; ++i) tokens += {static_cast<char>(1 + i * 7 % 250), '\0'};
        waste_test::write_file(made->dir.path() / "tokens.u16", tokens);
        return made;
    }();
    return *m;
}

struct Command {
    const char* name;
    std::vector<std::string> args;  // after `waste`; MODEL, BUDGET, DIR are replaced
    std::string stdin_text;
    bool constrained = false;  // BUDGET adds the grammar slot the command plans
};

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
    for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
        text.replace(at, from.size(), to);
    return text;
}

class BudgetCgroup : public ::testing::TestWithParam<Command> {};

TEST_P(BudgetCgroup, RunsInsideAMemoryCgroupOfTheBudgetWithoutBeingKilled) {
#ifdef WASTE_UNDER_SANITIZER
    GTEST_SKIP() << "a sanitizer's shadow memory is resident memory the engine never allocated; the release suite runs this";
#endif
    const Model& m = model();
    ASSERT_GT(m.budget, 0u);
    ASSERT_GT(m.experts, 2 * m.budget) << "the experts must not fit the budget";
    const Command& command = GetParam();
    const uint64_t budget = m.budget + (command.constrained ? m.grammar_reserve : 0);
    if (command.constrained) ASSERT_GT(m.grammar_reserve, 0u);
    std::string why;
    const std::unique_ptr<waste_test::MemoryCgroup> group = waste_test::MemoryCgroup::create(budget + slack_bytes, &why);
    if (!group) WASTE_SKIP_ENVIRONMENT("cgroup", why);

    std::vector<std::string> argv = {waste_test::cli_path().string()};
    for (const std::string& arg : command.args)
        argv.push_back(replace_all(replace_all(replace_all(arg, "MODEL", m.path), "BUDGET", std::to_string(budget)), "DIR",
                                   m.dir.path().string()));
    const waste_test::ChildRun run =
        waste_test::run_child(argv, {.cgroup_procs = group->procs_file(),
                                     .stdin_text = replace_all(command.stdin_text, "DIR", m.dir.path().string()),
                                     .pid_path = ""});
    std::printf("%s: cgroup v%d limit %llu (budget %llu + slack %llu): peak RSS %llu, cgroup peak %llu "
                "(with page cache and kernel memory), limit reached %llu times, OOM kills %llu\n",
                command.name, group->version(), static_cast<unsigned long long>(group->limit_bytes()),
                static_cast<unsigned long long>(budget), static_cast<unsigned long long>(slack_bytes),
                static_cast<unsigned long long>(run.peak_rss), static_cast<unsigned long long>(group->peak_bytes()),
                static_cast<unsigned long long>(group->limit_hits()), static_cast<unsigned long long>(group->oom_kills()));
    EXPECT_EQ(group->oom_kills(), 0u) << run.describe();
    ASSERT_TRUE(run.exited_ok()) << run.describe();
    EXPECT_LE(run.peak_rss, budget) << run.output;
}

TEST(BudgetCgroupPlan, TheDefaultBudgetSeesTheCgroupLimit) {
    // A container's limit caps the RAM the plan may use (cgroup v2 memory.max,
    // or v1 memory.limit_in_bytes), so a command without --budget picks one
    // the container holds.
    const Model& m = model();
    std::string why;
    const uint64_t limit = uint64_t{200} << 20;
    const std::unique_ptr<waste_test::MemoryCgroup> group = waste_test::MemoryCgroup::create(limit, &why);
    if (!group) WASTE_SKIP_ENVIRONMENT("cgroup", why);
    const waste_test::ChildRun run = waste_test::run_child({waste_test::cli_path().string(), "plan", m.path, "--json"},
                                                           {.cgroup_procs = group->procs_file(), .stdin_text = "", .pid_path = ""});
    ASSERT_TRUE(run.exited_ok()) << run.describe();
    const json plan = json::parse(run.output);
    EXPECT_EQ(plan["cgroup_limit_bytes"].get<uint64_t>(), limit) << run.output;
    EXPECT_EQ(plan["usable_ram_bytes"].get<uint64_t>(), limit) << run.output;
    EXPECT_LE(plan["recommended_bytes"].get<uint64_t>(), limit / 8 * 7) << run.output;
}

// Every command that opens a model. Those without --budget open it
// metadata-only (info, plan, verify, tokenize, detokenize) and are held to
// the same budget. Sampling is greedy (--temp 0) so that nothing depends on
// the CLI's sampling defaults.
const Command commands[] = {
    {"info", {"info", "MODEL", "--json"}, ""},
    {"plan", {"plan", "MODEL", "--ctx", "64", "--budget", "BUDGET", "--json"}, ""},
    {"verify", {"verify", "MODEL"}, ""},
    {"tokenize", {"tokenize", "MODEL", "In the beginning"}, ""},
    {"detokenize", {"detokenize", "MODEL", "--ids", "70 71 72"}, ""},
    {"eval",
     {"eval", "MODEL", "--ids", "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16", "--chunk", "1", "--ctx", "64", "--budget",
      "BUDGET", "--threads", "2"},
     ""},
    {"perplexity",
     {"perplexity", "MODEL", "DIR/tokens.u16", "--window", "16", "--budget", "BUDGET", "--threads", "2"},
     ""},
    {"run",
     {"run", "MODEL", "--ids", "1 2 3", "-n", "16", "--ignore-eos", "--temp", "0", "--ctx", "64", "--budget", "BUDGET",
      "--threads", "2"},
     ""},
    // constrained: a JSON value at temperature 1, its grammar and state in
    // the plan (one grammar slot and the vocabulary's trie)
    {"run_json_value",
     {"run", "MODEL", "Answer in JSON:", "-n", "48", "--temp", "1", "--seed", "5", "--json-value", "--ctx", "64",
      "--budget", "BUDGET", "--threads", "2"},
     "",
     true},
    {"chat",
     {"chat", "MODEL", "--raw", "-n", "8", "--ignore-eos", "--temp", "0", "--ctx", "64", "--budget", "BUDGET",
      "--threads", "2"},
     "In the beginning\n/stats\n/save DIR/chat.state\n/reset\n/load DIR/chat.state\nand then\n"},
    {"bench",
     {"bench", "MODEL", "-n", "8", "--prompt", "8", "--runs", "1", "--budget", "BUDGET", "--threads", "2", "--json"},
     ""},
    // two sessions and a snapshot reserve holding both sessions' snapshots:
    // the plan's extra floor (two states and workspaces at 64 tokens, two
    // 40-token snapshots) is well inside one token's experts, which BUDGET
    // adds to the one-session floor
    {"bench_reuse",
     {"bench-reuse", "MODEL", "--history", "40", "--turn", "8", "--sessions", "2", "--runs", "1", "--ctx", "64", "--budget",
      "BUDGET", "--threads", "2", "--json"},
     ""},
};

INSTANTIATE_TEST_SUITE_P(EveryCommand, BudgetCgroup, ::testing::ValuesIn(commands),
                         [](const ::testing::TestParamInfo<Command>& info) { return std::string(info.param.name); });

}  // namespace
