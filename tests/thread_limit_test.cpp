// thread_limit_test.cpp — the bound on thread counts (WASTE_MAX_THREADS):
// every C API entry that starts threads refuses more with
// WASTE_ERR_INVALID_ARGUMENT naming the value, accepts the bound itself, and
// the CLI turns more into a usage error (exit 2). Incident: --threads had no
// bound; 1,000 threads turned a 0.24 s run into 15 s and 100,000 never ended.
#include <gtest/gtest.h>

#include <string>

#include "test_support.h"
#include "waste/waste.h"

namespace {

class ThreadLimit : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        dir_ = new waste_test::TempDir();
        waste_error error{};
        ASSERT_EQ(waste_synth((dir_->path() / "tiny").c_str(), "tiny", 1, nullptr, nullptr, nullptr, &error), WASTE_OK)
            << error.message;
    }
    static void TearDownTestSuite() {
        delete dir_;
        dir_ = nullptr;
    }
    static std::string model() { return (dir_->path() / "tiny").string(); }
    static inline waste_test::TempDir* dir_ = nullptr;
};

TEST_F(ThreadLimit, CApiRefusesMoreThanTheBoundNamingTheValue) {
    static_assert(WASTE_MAX_THREADS == 256, "docs/CLI.md and the --help texts say 256");
    for (const uint32_t threads : {WASTE_MAX_THREADS + 1, 100000u}) {
        const std::string value = std::to_string(threads);
        waste_open_options options;
        waste_open_options_init(&options);
        options.threads = threads;
        for (const uint32_t flags : {0u, static_cast<uint32_t>(WASTE_OPEN_METADATA_ONLY)}) {
            options.flags = flags;
            waste_model* opened = nullptr;
            waste_error error{};
            EXPECT_EQ(waste_model_open(model().c_str(), &options, &opened, &error), WASTE_ERR_INVALID_ARGUMENT) << value;
            EXPECT_EQ(opened, nullptr);
            EXPECT_NE(std::string(error.message).find("threads " + value + " is above the limit of 256"), std::string::npos)
                << error.message;
        }
        double bandwidth = 0;
        waste_error error{};
        EXPECT_EQ(waste_measure_memory_bandwidth(threads, 0, &bandwidth, &error), WASTE_ERR_INVALID_ARGUMENT);
        EXPECT_NE(std::string(error.message).find("threads " + value), std::string::npos) << error.message;
        double peak = 0;
        EXPECT_EQ(waste_measure_compute_peak(threads, &peak, &error), WASTE_ERR_INVALID_ARGUMENT);
        EXPECT_NE(std::string(error.message).find("threads " + value), std::string::npos) << error.message;
        // Refused before the source is read: the directory need not exist.
        const std::string convert_options = "{\"jobs\": " + value + "}";
        char* summary = nullptr;
        EXPECT_EQ(waste_convert("/nonexistent-source", (dir_->path() / "out").c_str(), convert_options.c_str(), nullptr,
                                nullptr, nullptr, &summary, &error),
                  WASTE_ERR_INVALID_ARGUMENT);
        EXPECT_NE(std::string(error.message).find("jobs " + value), std::string::npos) << error.message;
    }
}

// The bound itself is allowed: the model opens with 256 compute threads (no
// token is evaluated: 256 threads taking turns on a shared 2-core test
// machine would only make the suite slow).
TEST_F(ThreadLimit, TheBoundItselfIsAccepted) {
    waste_open_options options;
    waste_open_options_init(&options);
    options.threads = WASTE_MAX_THREADS;
    options.context_length = 16;
    waste_test::OpenedSession s;
    waste_error error{};
    ASSERT_EQ(waste_model_open(model().c_str(), &options, &s.model, &error), WASTE_OK) << error.message;
    EXPECT_EQ(waste_session_create(s.model, &s.session, &error), WASTE_OK) << error.message;
}

TEST_F(ThreadLimit, CliRefusesMoreAsAUsageError) {
    const std::string cli = waste_test::cli_path().string(), m = "'" + model() + "'";
    const std::string commands[] = {
        cli + " run " + m + " --ids 1 -n 1 --threads 257",
        cli + " chat " + m + " --threads 257 < /dev/null",
        cli + " eval " + m + " --ids 1 --threads 257",
        cli + " perplexity " + m + " /dev/null --threads 257",
        cli + " bench " + m + " -n 1 --threads 257",
        cli + " convert /nonexistent-source " + (dir_->path() / "out").string() + " --jobs 257",
        cli + " diskbench " + dir_->path().string() + " --threads 257",
    };
    for (const std::string& command : commands) {
        std::string output;
        EXPECT_EQ(waste_test::run_command(command, &output), 2) << command << "\n" << output;
        EXPECT_NE(output.find("257"), std::string::npos) << command << "\n" << output;
        EXPECT_NE(output.find("256"), std::string::npos) << command << "\n" << output;
    }
}

}  // namespace
