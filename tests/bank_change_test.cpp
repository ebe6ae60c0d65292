// bank_change_test.cpp — an expert bank that changes under a running engine:
// truncated in place, or replaced (a new file renamed over its path). Both
// are refused by name — the error names the layer and the bank file — on the
// next read from that bank, with every read path; nothing is computed on
// them, and the refusal holds for every later generation (the engine must be
// reopened). A replaced bank would still read the old, consistent bytes
// through the open descriptor; it is refused all the same, because the
// container on disk is no longer the one opened (docs/ARCHITECTURE.md,
// "Files that change").
//
// Comparisons of logits are bit-exact (tolerance 0): before the change the
// engine must give the never-changed run's logits.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_support.h"
#include "waste/waste.h"

namespace {

namespace fs = std::filesystem;

const char* churn_overrides = R"({"num_hidden_layers": 6, "num_experts": 32, "num_experts_per_token": 4})";
constexpr uint32_t test_context = 64;

using Outcome = waste_test::Generation;

// A prompt and four greedy steps.
Outcome generate(waste_session* session) { return waste_test::greedy_generation(session, {1, 5, 9, 2, 7, 3, 8, 4}, 4); }

// At the floor budget every token reads from every bank.
struct Opened : waste_test::StreamingSession {
    Opened(const std::string& path, uint32_t io)
        : StreamingSession(path, test_context, waste_test::floor_bytes(path, test_context), io, 2) {}
};

// Layer 3's bank (an MoE layer in the middle), from the manifest.
fs::path bank_of(const fs::path& model) {
    const auto manifest = nlohmann::json::parse(waste_test::read_file(model / "manifest.json"));
    return model / manifest["layers"]["3"]["file"].get<std::string>();
}

enum class Change { truncate, replace };

void change_under_engine(Change change, uint32_t io) {
    waste_test::TempDir dir;
    const fs::path path = dir / "model";
    waste_error error{};
    ASSERT_EQ(waste_synth(path.c_str(), "tiny", 7, churn_overrides, nullptr, nullptr, &error), WASTE_OK) << error.message;
    Opened engine(path.string(), io);
    if (io == WASTE_IO_URING && engine.status == WASTE_ERR_UNSUPPORTED)
        WASTE_SKIP_ENVIRONMENT("io_uring", "io_uring refused here: " << engine.message);
    ASSERT_EQ(engine.status, WASTE_OK) << engine.message;
    const Outcome before = generate(engine.session);
    ASSERT_EQ(before.status, WASTE_OK) << before.message;

    const fs::path bank = bank_of(path);
    const std::string name = bank.filename().string();
    if (change == Change::truncate) {
        // in place, as a crashed copy or a careless `truncate` leaves it: the
        // open descriptor now reads past the end as short reads
        ASSERT_EQ(::truncate(bank.c_str(), static_cast<off_t>(fs::file_size(bank) / 2)), 0);
    } else {
        // a new file renamed over the path, as an update does it: same bytes,
        // another inode
        const fs::path fresh = dir / "fresh.bin";
        fs::copy_file(bank, fresh);
        fs::rename(fresh, bank);
    }
    for (int attempt = 0; attempt < 2; ++attempt) {
        const Outcome after = generate(engine.session);
        EXPECT_EQ(after.status, WASTE_ERR_IO) << "attempt " << attempt << ": " << after.message;
        EXPECT_NE(after.message.find("layer 3"), std::string::npos) << after.message;
        EXPECT_NE(after.message.find(name), std::string::npos) << after.message;
        EXPECT_NE(after.message.find(change == Change::truncate ? "changed size" : "replaced"), std::string::npos)
            << after.message;
        EXPECT_EQ(waste_session_position(engine.session), 0u) << "refused, the session is reset";
    }
    // the same container, reopened, runs again (the replaced bank holds the
    // same bytes), and gives the old logits: the refusal was about the change
    if (change == Change::replace) {
        Opened again(path.string(), io);
        ASSERT_EQ(again.status, WASTE_OK) << again.message;
        const Outcome reopened = generate(again.session);
        EXPECT_EQ(reopened.status, WASTE_OK) << reopened.message;
        EXPECT_TRUE(reopened.logits == before.logits);
    }
}

TEST(BankChange, TruncatedInPlaceIsRefusedByNameOnEveryReadPath) {
    for (uint32_t io : {WASTE_IO_SYNC, WASTE_IO_PREAD, WASTE_IO_URING}) {
        SCOPED_TRACE(io);
        change_under_engine(Change::truncate, io);
    }
}

TEST(BankChange, ReplacedWhileOpenIsRefusedByNameOnEveryReadPath) {
    for (uint32_t io : {WASTE_IO_SYNC, WASTE_IO_PREAD, WASTE_IO_URING}) {
        SCOPED_TRACE(io);
        change_under_engine(Change::replace, io);
    }
}

}  // namespace
