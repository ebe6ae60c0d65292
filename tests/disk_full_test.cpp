// disk_full_test.cpp — writing into a full filesystem (issue 18, item 3).
//
// Every writer of the library and the CLI, meeting a real ENOSPC from a
// small tmpfs (test_support's SmallFilesystem): the error names the file
// (WASTE_ERR_IO through the API, exit 1 from the CLI), nothing half-written
// is published, no temporary is left, an older file of the same name is
// left as it was; and an interrupted `waste convert` resumes, once there is
// space, into a container byte-identical to an uninterrupted one.
// Each test first checks that the same write succeeds with space, so that
// a failure for another reason cannot pass for the disk-full one. Where
// mounting a tmpfs is not permitted (not root), the tests skip saying why.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "platform/error.h"
#include "platform/output_file.h"
#include "test_support.h"
#include "waste/waste.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using waste_test::container_files;
using waste_test::SmallFilesystem;

const std::string no_space = std::strerror(ENOSPC);

#define SKIP_UNLESS_MOUNTED(disk) \
    if (!(disk).mounted()) WASTE_SKIP_ENVIRONMENT("tmpfs", (disk).why())

std::string shell_quoted(const fs::path& path) { return "'" + path.string() + "'"; }
std::string cli() { return shell_quoted(waste_test::cli_path()); }

// The message names the file and says the disk was full.
void expect_names(const std::string& message, const fs::path& file) {
    EXPECT_NE(message.find(file.string()), std::string::npos) << "the message does not name " << file << ": " << message;
    EXPECT_NE(message.find(no_space), std::string::npos) << "the message does not say ENOSPC: " << message;
}

void expect_no_tmp(const fs::path& dir) {
    for (const std::string& tmp : waste_test::tmp_files_under(dir)) ADD_FAILURE() << "a temporary is left: " << tmp;
}

TEST(DiskFull, OutputFileFailsNamingTheFileAndKeepsTheOldOne) {
    SmallFilesystem disk(256 << 10);
    SKIP_UNLESS_MOUNTED(disk);
    const fs::path target = disk / "state.bin";
    waste::platform::write_small_file(target.string(), "old contents");
    disk.fill();
    try {
        waste::platform::write_small_file(target.string(), std::string(100000, 'n'));
        FAIL() << "a write into a full filesystem succeeded";
    } catch (const waste::Error& e) {
        EXPECT_EQ(e.status(), WASTE_ERR_IO);
        expect_names(e.what(), target);
    }
    EXPECT_EQ(waste_test::read_file(target), "old contents") << "the older file was touched";
    expect_no_tmp(disk.path());

    // The streaming writer (large buffers, direct I/O when the filesystem
    // takes it, a background thread): 1 MiB into 256 KiB fails at a write
    // or at the commit, and removes its temporary either way.
    disk.unfill();
    const fs::path big = disk / "big.bin";
    waste::platform::OutputFileOptions options;
    options.buffer_bytes = 64 << 10;
    options.buffers = 2;
    try {
        waste::platform::OutputFile file(big.string(), options);
        file.write_zeros(1 << 20);
        file.commit();
        FAIL() << "1 MiB fitted in a 256 KiB filesystem";
    } catch (const waste::Error& e) {
        EXPECT_EQ(e.status(), WASTE_ERR_IO);
        expect_names(e.what(), big);
    }
    EXPECT_FALSE(fs::exists(big));
    expect_no_tmp(disk.path());
    // The space is back: the failure was the disk, not the writer.
    EXPECT_NO_THROW(waste::platform::write_small_file(target.string(), std::string(100000, 'n')));
    EXPECT_EQ(fs::file_size(target), 100000u);
}

// The last step failing (the rename, here over a directory, as a target on
// a read-only or vanished mount would) also leaves no temporary; this one
// needs no mount, so it runs for every user. Through the C API, as clients
// (the CLI's --dump-hidden) call it.
TEST(DiskFull, AFailedRenameRemovesTheTemporary) {
    waste_test::TempDir dir;
    const fs::path target = dir / "taken";
    fs::create_directory(target);
    waste_test::write_file(target / "inside", "kept");
    const std::string bytes(5000, 'b');
    waste_error error{};
    EXPECT_EQ(waste_file_write(target.c_str(), bytes.data(), bytes.size(), &error), WASTE_ERR_IO);
    EXPECT_NE(std::string(error.message).find(target.string()), std::string::npos) << error.message;
    EXPECT_NE(std::string(error.message).find("renaming"), std::string::npos) << error.message;
    EXPECT_EQ(waste_test::read_file(target / "inside"), "kept");
    expect_no_tmp(dir.path());
    EXPECT_EQ(waste_file_write((dir / "free").c_str(), bytes.data(), bytes.size(), &error), WASTE_OK) << error.message;
    EXPECT_EQ(waste_test::read_file(dir / "free"), bytes);
}

// A tiny synthetic container shared by the tests below, made once (removed at exit).
fs::path model() {
    static const waste_test::TempDir dir;
    static const std::string made = [] {
        waste_error error{};
        return waste_synth((dir.path() / "tiny").c_str(), "tiny", 3, nullptr, nullptr, nullptr, &error) == WASTE_OK
                   ? std::string()
                   : std::string(error.message);
    }();
    EXPECT_EQ(made, "") << "waste_synth of the tiny container failed";
    return dir.path() / "tiny";
}

TEST(DiskFullModel, SessionStateSaveFailsCleanlyAndKeepsTheOldState) {
    SmallFilesystem disk(2 << 20);
    SKIP_UNLESS_MOUNTED(disk);
    waste_test::OpenedSession s;
    waste_error error{};
    waste_open_options options;
    waste_open_options_init(&options);
    options.context_length = 64;
    options.threads = 1;
    ASSERT_EQ(waste_model_open(model().c_str(), &options, &s.model, &error), WASTE_OK) << error.message;
    ASSERT_EQ(waste_session_create(s.model, &s.session, &error), WASTE_OK) << error.message;
    const int32_t first[] = {1, 2, 3};
    ASSERT_EQ(waste_session_eval(s.session, first, 3, &error), WASTE_OK) << error.message;
    const fs::path state = disk / "chat.state";
    ASSERT_EQ(waste_state_save(s.session, state.c_str(), &error), WASTE_OK) << error.message;
    const std::string saved = waste_test::read_file(state);

    disk.fill();
    const int32_t more[] = {4, 5, 6, 7};
    ASSERT_EQ(waste_session_eval(s.session, more, 4, &error), WASTE_OK) << error.message;
    EXPECT_EQ(waste_state_save(s.session, state.c_str(), &error), WASTE_ERR_IO);
    expect_names(error.message, state);
    EXPECT_TRUE(waste_test::read_file(state) == saved) << "the older state file was touched";
    expect_no_tmp(disk.path());

    disk.unfill();
    ASSERT_EQ(waste_state_save(s.session, state.c_str(), &error), WASTE_OK) << error.message;
    EXPECT_EQ(waste_state_load(s.session, state.c_str(), &error), WASTE_OK) << error.message;
    EXPECT_EQ(waste_session_position(s.session), 7u);
}

TEST(DiskFullModel, ChatSaveReportsTheFileAndGoesOn) {
    SmallFilesystem disk(256 << 10);
    SKIP_UNLESS_MOUNTED(disk);
    disk.fill();
    const fs::path state = disk / "chat.state";
    std::string output;
    // /save into the full disk, then a /save that fits elsewhere: chat reports
    // the first and carries on to the second.
    waste_test::TempDir elsewhere;
    const std::string input = "/save " + state.string() + "\n/save " + (elsewhere / "ok.state").string() + "\n";
    const int status = waste_test::run_command(
        "printf '%s' " + shell_quoted(input) + " | " + cli() + " chat " + shell_quoted(model()) + " --raw", &output);
    EXPECT_EQ(status, 0) << output;
    EXPECT_NE(output.find("cannot save"), std::string::npos) << output;
    expect_names(output, state);
    EXPECT_FALSE(fs::exists(state));
    EXPECT_TRUE(fs::exists(elsewhere / "ok.state")) << "chat stopped after the failed /save:\n" << output;
    expect_no_tmp(disk.path());
}

TEST(DiskFullModel, LearnedUsageFileFailsWithExit1AndKeepsTheOldOne) {
    SmallFilesystem disk(256 << 10);
    SKIP_UNLESS_MOUNTED(disk);
    const fs::path usage = disk / "usage.waste";
    const std::string command = cli() + " eval " + shell_quoted(model()) + " --ids '1 2 3' --learn --usage " + shell_quoted(usage);
    std::string output;
    ASSERT_EQ(waste_test::run_command(command, &output), 0) << output;
    const std::string learned = waste_test::read_file(usage);
    ASSERT_FALSE(learned.empty());

    disk.fill();
    EXPECT_EQ(waste_test::run_command(command, &output), 1) << output;
    expect_names(output, usage);
    EXPECT_TRUE(waste_test::read_file(usage) == learned) << "the older hotlist was touched";
    expect_no_tmp(disk.path());
}

TEST(DiskFullModel, RouteAndHiddenDumpsFailWithExit1AndPublishNothing) {
    SmallFilesystem disk(256 << 10);
    SKIP_UNLESS_MOUNTED(disk);
    const std::string eval = cli() + " eval " + shell_quoted(model()) + " --ids '1 2 3 4'";
    const fs::path route = disk / "route.jsonl", hidden = disk / "hidden.bin";
    std::string output;
    // With space, both are written (and the route dump is readable as a trace).
    ASSERT_EQ(waste_test::run_command(eval + " --dump-route " + shell_quoted(route) + " --dump-hidden " + shell_quoted(hidden), &output), 0)
        << output;
    EXPECT_EQ(json::parse(waste_test::read_file(route).substr(0, waste_test::read_file(route).find('\n')))["tok"], 0);
    EXPECT_GT(fs::file_size(hidden), 16u);
    fs::remove(route);
    fs::remove(hidden);

    disk.fill();
    EXPECT_EQ(waste_test::run_command(eval + " --dump-route " + shell_quoted(route), &output), 1) << output;
    expect_names(output, route);
    EXPECT_FALSE(fs::exists(route));
    EXPECT_EQ(waste_test::run_command(eval + " --dump-hidden " + shell_quoted(hidden), &output), 1) << output;
    expect_names(output, hidden);
    EXPECT_FALSE(fs::exists(hidden));
    expect_no_tmp(disk.path());
}

TEST(DiskFullModel, SynthIntoAFullDiskLeavesNothing) {
    const uint64_t need = [] {
        uint64_t bytes = 0;
        for (const auto& entry : fs::directory_iterator(model())) bytes += entry.file_size();
        return bytes;
    }();
    SmallFilesystem disk(need / 2);
    SKIP_UNLESS_MOUNTED(disk);
    const fs::path out = disk / "out";
    std::string output;
    EXPECT_EQ(waste_test::run_command(cli() + " synth " + shell_quoted(out) + " --preset tiny --seed 3", &output), 1) << output;
    expect_names(output, out);
    // Not a container, and not the pieces of one: the writer removed what it had published.
    std::vector<std::string> left;
    for (const auto& entry : fs::directory_iterator(out)) left.push_back(entry.path().filename().string());
    EXPECT_TRUE(left.empty()) << left.size() << " files left, the first " << left.front();

    disk.resize(need * 2);
    EXPECT_EQ(waste_test::run_command(cli() + " synth " + shell_quoted(out) + " --preset tiny --seed 3", &output), 0) << output;
    EXPECT_TRUE(container_files(out) == container_files(model())) << "the synth with space differs from the suite's";
}

uint64_t bytes_under(const fs::path& dir) {
    uint64_t bytes = 0;
    for (const auto& entry : fs::recursive_directory_iterator(dir))
        if (entry.is_regular_file()) bytes += entry.file_size();
    return bytes;
}

TEST(DiskFullConvert, FailsNamingTheFileThenResumesByteIdentical) {
    auto checkpoint = waste_test::hf_synth("--model kimi-linear --shards 2");
    ASSERT_TRUE(fs::exists(checkpoint->dir / "config.json"));
    const std::string convert = cli() + " convert " + shell_quoted(checkpoint->dir) +
                                " --sample-experts 4 --train-vectors 4096 --iterations 4 --jobs 2 --json ";
    waste_test::TempDir tmp;
    std::string output;
    ASSERT_EQ(waste_test::run_command(convert + shell_quoted(tmp / "ref"), &output), 0) << output;
    const auto want = container_files(tmp / "ref");
    const uint64_t need = bytes_under(tmp / "ref");

    // Room for the first units' parts and banks, not for the whole container.
    SmallFilesystem disk(need * 2 / 3);
    SKIP_UNLESS_MOUNTED(disk);
    const fs::path out = disk / "out";
    EXPECT_EQ(waste_test::run_command(convert + shell_quoted(out), &output), 1) << output;
    expect_names(output, out);
    EXPECT_FALSE(fs::exists(out / "manifest.json")) << "a container was published";
    expect_no_tmp(disk.path());

    // Space freed: the rerun resumes (finished units are not redone) and the
    // container is the uninterrupted one, byte for byte.
    disk.resize(need * 4);
    ASSERT_EQ(waste_test::run_command(convert + shell_quoted(out), &output), 0) << output;
    const json summary = json::parse(output.substr(output.find('{')));
    EXPECT_GT(summary["resumed_units"].get<int>(), 0) << "the disk filled before any unit was finished";
    const auto got = container_files(out);
    ASSERT_EQ(got.size(), want.size());
    for (const auto& [name, bytes] : want) EXPECT_TRUE(got.at(name) == bytes) << name << " differs after the resume";
    expect_no_tmp(disk.path());
}

}  // namespace
