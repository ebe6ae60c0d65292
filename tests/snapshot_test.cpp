// snapshot_test.cpp — session snapshots (prompt reuse) and several sessions
// in the memory plan, through the C API, on synthetic containers: "tiny"
// (Kimi-Linear-like: KDA and one MLA layer) and "tiny-k3" (AttnRes block
// residuals, latent MoE, gated MLA).
//
// Tolerances: a restore is bit-exact (tolerance 0): it copies every float
// that the next token depends on. Resuming a prompt from a snapshot is
// bit-exact when the prefix ends on a prefill-chunk boundary, because then
// the engine runs the very same chunks; otherwise the chunks differ, and the
// logits agree within the chunked-prefill tolerance waste.h documents
// (waste_session_set_prefill_chunk: 1e-3), with greedy tokens identical.
// The peak-RSS case is bounded by the budget itself (the plan's promise).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "child_process.h"
#include "test_support.h"
#include "waste/waste.h"

namespace {

using nlohmann::json;

struct Synthetic {
    waste_test::TempDir dir;
    std::string path;
};

const Synthetic& synth(const std::string& preset) {
    static std::map<std::string, std::unique_ptr<Synthetic>> made;
    auto& slot = made[preset];
    if (!slot) {
        slot = std::make_unique<Synthetic>();
        slot->path = (slot->dir.path() / preset).string();
        waste_error error{};
        EXPECT_EQ(waste_synth(slot->path.c_str(), preset.c_str(), 11, nullptr, nullptr, nullptr, &error), WASTE_OK)
            << error.message;
    }
    return *slot;
}

constexpr uint32_t context = 256;
const char* const presets[] = {"tiny", "tiny-k3", "tiny-qwen35"};  // KDA + MLA, GDN + GQA

// Deterministic ids below the tiny presets' vocabulary (316).
std::vector<int32_t> tokens(size_t count, uint32_t seed) {
    std::vector<int32_t> out(count);
    uint32_t x = seed * 2654435761u + 1;
    for (int32_t& id : out) {
        x = x * 1664525u + 1013904223u;
        id = static_cast<int32_t>((x >> 8) % 300);
    }
    return out;
}

struct Model {
    waste_model* model = nullptr;
    waste_status status = WASTE_OK;
    std::string message;
    Model(const std::string& path, uint32_t sessions, uint64_t snapshot_bytes, uint64_t budget = 0) {
        waste_open_options options;
        waste_open_options_init(&options);
        options.context_length = context;
        options.threads = 2;
        options.flags = WASTE_OPEN_NO_HOTLIST;
        options.sessions = sessions;
        options.snapshot_bytes = snapshot_bytes;
        options.budget_bytes = budget;
        waste_error error{};
        status = waste_model_open(path.c_str(), &options, &model, &error);
        message = error.message;
    }
    ~Model() { waste_model_close(model); }
    Model(const Model&) = delete;
    Model& operator=(const Model&) = delete;
};

using SessionPtr = std::unique_ptr<waste_session, void (*)(waste_session*)>;
using SnapshotPtr = std::unique_ptr<waste_snapshot, void (*)(waste_snapshot*)>;

SessionPtr new_session(waste_model* model, uint32_t chunk = 64) {
    waste_session* session = nullptr;
    waste_error error{};
    EXPECT_EQ(waste_session_create(model, &session, &error), WASTE_OK) << error.message;
    if (session) {
        EXPECT_EQ(waste_session_set_prefill_chunk(session, chunk, &error), WASTE_OK) << error.message;
    }
    return SessionPtr(session, waste_session_free);
}

SnapshotPtr take(waste_session* session) {
    waste_snapshot* snapshot = nullptr;
    waste_error error{};
    EXPECT_EQ(waste_session_snapshot(session, &snapshot, &error), WASTE_OK) << error.message;
    return SnapshotPtr(snapshot, waste_snapshot_free);
}

void eval(waste_session* session, const std::vector<int32_t>& ids) {
    waste_error error{};
    ASSERT_EQ(waste_session_eval(session, ids.data(), ids.size(), &error), WASTE_OK) << error.message;
}

std::vector<float> logits_of(waste_session* session) {
    const float* logits = nullptr;
    size_t vocab = 0;
    waste_error error{};
    EXPECT_EQ(waste_session_logits(session, &logits, &vocab, &error), WASTE_OK) << error.message;
    return logits ? std::vector<float>(logits, logits + vocab) : std::vector<float>{};
}

// `steps` greedy tokens from where the session is: the tokens, and the
// logits before each of them and after the last, concatenated.
struct Continuation {
    std::vector<int32_t> tokens;
    std::vector<float> logits;
};
Continuation continue_greedy(waste_session* session, int steps) {
    Continuation c;
    for (int step = 0;; ++step) {
        const std::vector<float> logits = logits_of(session);
        c.logits.insert(c.logits.end(), logits.begin(), logits.end());
        if (step == steps || logits.empty()) break;
        const int32_t next = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
        c.tokens.push_back(next);
        waste_error error{};
        EXPECT_EQ(waste_session_eval(session, &next, 1, &error), WASTE_OK) << error.message;
    }
    return c;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), sizeof(float) * a.size()) == 0;
}

float max_difference(const std::vector<float>& a, const std::vector<float>& b) {
    EXPECT_EQ(a.size(), b.size());
    float worst = 0;
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) worst = std::max(worst, std::fabs(a[i] - b[i]));
    return worst;
}

json plan_of(const std::string& path, uint32_t sessions, uint64_t snapshot_bytes, uint64_t budget = 0) {
    waste_open_options options;
    waste_open_options_init(&options);
    options.flags = WASTE_OPEN_METADATA_ONLY;
    options.threads = 2;
    options.sessions = sessions;
    options.snapshot_bytes = snapshot_bytes;
    waste_model* model = nullptr;
    waste_error error{};
    EXPECT_EQ(waste_model_open(path.c_str(), &options, &model, &error), WASTE_OK) << error.message;
    if (!model) return json::object();
    waste_plan_options plan_options{context, budget};
    char* text = nullptr;
    EXPECT_EQ(waste_model_plan_json(model, &plan_options, &text, &error), WASTE_OK) << error.message;
    json plan = text ? json::parse(text) : json::object();
    waste_string_free(text);
    waste_model_close(model);
    return plan;
}

constexpr uint64_t plenty = 64ull << 20;  // a snapshot reserve no test here fills

// ------------------------------------------------------------- restore

TEST(Snapshot, RestoreGivesBitIdenticalLogitsAndContinuation) {
    for (const char* preset : presets) {
        SCOPED_TRACE(preset);
        Model m(synth(preset).path, 0, plenty);
        ASSERT_EQ(m.status, WASTE_OK) << m.message;
        SessionPtr original = new_session(m.model);
        eval(original.get(), tokens(90, 1));
        const SnapshotPtr snapshot = take(original.get());
        ASSERT_TRUE(snapshot);
        EXPECT_EQ(waste_snapshot_position(snapshot.get()), 90u);
        const Continuation expected = continue_greedy(original.get(), 12);

        // into the same session (which has moved on), then into fresh ones and
        // back, many times: the snapshot is never changed by a restore
        SessionPtr other = new_session(m.model);
        eval(other.get(), tokens(40, 2));  // holding a different conversation first
        for (int round = 0; round < 5; ++round) {
            waste_session* into = round % 2 ? other.get() : original.get();
            waste_error error{};
            ASSERT_EQ(waste_session_restore(into, snapshot.get(), &error), WASTE_OK) << error.message;
            EXPECT_EQ(waste_session_position(into), 90u);
            const Continuation got = continue_greedy(into, 12);
            EXPECT_EQ(got.tokens, expected.tokens) << "round " << round;
            EXPECT_TRUE(same_bits(got.logits, expected.logits)) << "round " << round;
        }
    }
}

TEST(Snapshot, RestoreMatchesTheStateFileRoundTrip) {
    // The snapshot and the state file copy the same fields (one field walk):
    // a restored session saves the very bytes the original saved.
    for (const char* preset : {"tiny-k3", "tiny-qwen35"}) {
        SCOPED_TRACE(preset);
        const std::string& path = synth(preset).path;
        Model m(path, 0, plenty);
        ASSERT_EQ(m.status, WASTE_OK) << m.message;
        SessionPtr a = new_session(m.model), b = new_session(m.model);
        eval(a.get(), tokens(70, 3));
        const SnapshotPtr snapshot = take(a.get());
        waste_error error{};
        ASSERT_EQ(waste_session_restore(b.get(), snapshot.get(), &error), WASTE_OK) << error.message;
        waste_test::TempDir tmp;
        ASSERT_EQ(waste_state_save(a.get(), (tmp / "a.state").c_str(), &error), WASTE_OK) << error.message;
        ASSERT_EQ(waste_state_save(b.get(), (tmp / "b.state").c_str(), &error), WASTE_OK) << error.message;
        const std::string bytes_a = waste_test::read_file(tmp / "a.state");
        EXPECT_FALSE(bytes_a.empty());
        EXPECT_TRUE(bytes_a == waste_test::read_file(tmp / "b.state"));
        // and the file loads back into a fresh session: the same bits again
        SessionPtr c = new_session(m.model);
        ASSERT_EQ(waste_state_load(c.get(), (tmp / "a.state").c_str(), &error), WASTE_OK) << error.message;
        ASSERT_EQ(waste_state_save(c.get(), (tmp / "c.state").c_str(), &error), WASTE_OK) << error.message;
        EXPECT_TRUE(bytes_a == waste_test::read_file(tmp / "c.state"));
    }
}

TEST(Snapshot, AtPositionZeroRestoresAnEmptySession) {
    Model m(synth("tiny").path, 0, plenty);
    ASSERT_EQ(m.status, WASTE_OK) << m.message;
    SessionPtr empty = new_session(m.model), used = new_session(m.model), fresh = new_session(m.model);
    const SnapshotPtr snapshot = take(empty.get());
    eval(used.get(), tokens(30, 4));
    waste_error error{};
    ASSERT_EQ(waste_session_restore(used.get(), snapshot.get(), &error), WASTE_OK) << error.message;
    EXPECT_EQ(waste_session_position(used.get()), 0u);
    const std::vector<int32_t> prompt = tokens(20, 5);
    eval(used.get(), prompt);
    eval(fresh.get(), prompt);
    EXPECT_TRUE(same_bits(continue_greedy(used.get(), 4).logits, continue_greedy(fresh.get(), 4).logits));
}

// ------------------------------------------------------- pending tokens

TEST(Snapshot, APendingGeneratedTokenIsCopiedNotEvaluated) {
    // waste_session_generate leaves its last token to be evaluated by the
    // next call. The snapshot copies it: the original continues exactly as a
    // session never snapshotted does (the token goes in with the next turn,
    // one chunk), and so does the restored one.
    for (const char* preset : presets) {
        SCOPED_TRACE(preset);
        Model m(synth(preset).path, 0, plenty);
        ASSERT_EQ(m.status, WASTE_OK) << m.message;
        SessionPtr snapped = new_session(m.model), untouched = new_session(m.model), restored = new_session(m.model);
        waste_generate_options options;
        waste_generate_options_init(&options);
        options.max_tokens = 6;
        options.flags = WASTE_GENERATE_IGNORE_EOS;
        for (waste_session* s : {snapped.get(), untouched.get()}) {
            eval(s, tokens(50, 6));
            waste_generate_result result{};
            waste_error error{};
            ASSERT_EQ(waste_session_generate(s, nullptr, &options, nullptr, nullptr, &result, &error), WASTE_OK)
                << error.message;
            ASSERT_EQ(result.tokens, 6u);
        }
        const SnapshotPtr snapshot = take(snapped.get());
        EXPECT_EQ(waste_snapshot_position(snapshot.get()), 56u);
        EXPECT_EQ(waste_session_position(snapped.get()), 56u);
        // one token of state fewer than a flushed snapshot, plus the id
        EXPECT_EQ(waste_snapshot_bytes(snapshot.get()), waste_model_snapshot_bytes(m.model, 55) + 4);
        waste_error error{};
        ASSERT_EQ(waste_session_restore(restored.get(), snapshot.get(), &error), WASTE_OK) << error.message;
        EXPECT_EQ(waste_session_position(restored.get()), 56u);
        const std::vector<int32_t> next_turn = tokens(9, 7);
        std::vector<Continuation> runs;
        for (waste_session* s : {snapped.get(), untouched.get(), restored.get()}) {
            eval(s, next_turn);
            runs.push_back(continue_greedy(s, 8));
        }
        EXPECT_TRUE(same_bits(runs[0].logits, runs[1].logits)) << "taking the snapshot changed the session";
        EXPECT_TRUE(same_bits(runs[2].logits, runs[1].logits)) << "the restored session differs";
    }
}

// --------------------------------------------------------- prompt reuse

struct ReuseCase {
    uint32_t chunk;
    size_t prefix, suffix;
    bool bit_exact;  // the prefix ends on a chunk boundary
};

TEST(Snapshot, PromptReuseMatchesAFreshPrefill) {
    const ReuseCase cases[] = {
        {64, 100, 45, false},  // fresh: chunks 64+64+17; resumed: 64+36, then 45
        {64, 64, 50, true},    // both 64, then 50
        {64, 128, 70, true},   // both 64+64, then 64+6
        {1, 37, 20, true},     // token by token
        {16, 40, 23, false},
    };
    for (const char* preset : presets) {
        Model m(synth(preset).path, 0, plenty);
        ASSERT_EQ(m.status, WASTE_OK) << m.message;
        for (const ReuseCase& c : cases) {
            SCOPED_TRACE(std::string(preset) + ", chunk " + std::to_string(c.chunk) + ", prefix " + std::to_string(c.prefix));
            const std::vector<int32_t> prefix = tokens(c.prefix, 8), suffix = tokens(c.suffix, 9);
            std::vector<int32_t> whole = prefix;
            whole.insert(whole.end(), suffix.begin(), suffix.end());
            SessionPtr fresh = new_session(m.model, c.chunk), first = new_session(m.model, c.chunk),
                       resumed = new_session(m.model, c.chunk);
            eval(fresh.get(), whole);
            const Continuation expected = continue_greedy(fresh.get(), 16);
            eval(first.get(), prefix);
            const SnapshotPtr snapshot = take(first.get());
            eval(resumed.get(), tokens(33, 10));  // another conversation, replaced by the restore
            waste_error error{};
            ASSERT_EQ(waste_session_restore(resumed.get(), snapshot.get(), &error), WASTE_OK) << error.message;
            eval(resumed.get(), suffix);
            EXPECT_EQ(waste_session_position(resumed.get()), whole.size());
            const Continuation got = continue_greedy(resumed.get(), 16);
            EXPECT_EQ(got.tokens, expected.tokens);
            if (c.bit_exact) {
                EXPECT_TRUE(same_bits(got.logits, expected.logits));
            } else {
                EXPECT_LE(max_difference(got.logits, expected.logits), 1e-3f);
            }
        }
    }
}

// ------------------------------------------------------------- budget

TEST(Snapshot, SnapshotsBeyondTheReserveAreRefusedNamingTheSizes) {
    const std::string& path = synth("tiny").path;
    uint64_t one = 0;
    {
        Model probe(path, 0, 0);
        ASSERT_EQ(probe.status, WASTE_OK) << probe.message;
        one = waste_model_snapshot_bytes(probe.model, 60);
        // the latent rows grow with the position; the rest is fixed
        const uint64_t row = waste_model_snapshot_bytes(probe.model, 61) - one;
        EXPECT_GT(row, 0u);
        EXPECT_EQ(waste_model_snapshot_bytes(probe.model, 160) - one, 100 * row);
        // no reserve: refused
        SessionPtr s = new_session(probe.model);
        eval(s.get(), tokens(60, 11));
        waste_snapshot* snapshot = nullptr;
        waste_error error{};
        EXPECT_EQ(waste_session_snapshot(s.get(), &snapshot, &error), WASTE_ERR_BUDGET);
        EXPECT_EQ(snapshot, nullptr);
        EXPECT_NE(std::string(error.message).find("reserve of 0 bytes"), std::string::npos) << error.message;
    }
    Model m(path, 0, 2 * one);
    ASSERT_EQ(m.status, WASTE_OK) << m.message;
    SessionPtr s = new_session(m.model);
    eval(s.get(), tokens(60, 11));
    SnapshotPtr first = take(s.get()), second = take(s.get());
    ASSERT_TRUE(first && second);
    EXPECT_EQ(waste_snapshot_bytes(first.get()), one);
    waste_snapshot* third = nullptr;
    waste_error error{};
    EXPECT_EQ(waste_session_snapshot(s.get(), &third, &error), WASTE_ERR_BUDGET);
    EXPECT_EQ(third, nullptr);
    const std::string message = error.message;
    for (const std::string& figure : {std::to_string(one), std::to_string(2 * one)})
        EXPECT_NE(message.find(figure), std::string::npos) << "no " << figure << " in: " << message;
    first.reset();  // its bytes go back
    SnapshotPtr again = take(s.get());
    EXPECT_TRUE(again);
    // a longer session's snapshot is larger: with one of the two freed it
    // no longer fits beside the other; with both freed it does
    eval(s.get(), tokens(10, 12));
    second.reset();
    EXPECT_EQ(waste_session_snapshot(s.get(), &third, &error), WASTE_ERR_BUDGET);
    again.reset();
    SnapshotPtr longer = take(s.get());
    ASSERT_TRUE(longer);
    EXPECT_EQ(waste_snapshot_bytes(longer.get()), waste_model_snapshot_bytes(m.model, 70));
}

TEST(Snapshot, SessionsBeyondThePlannedOnesAreRefused) {
    const std::string& path = synth("tiny").path;
    {
        Model m(path, 2, 0);
        ASSERT_EQ(m.status, WASTE_OK) << m.message;
        SessionPtr a = new_session(m.model), b = new_session(m.model);
        ASSERT_TRUE(a && b);
        waste_session* c = nullptr;
        waste_error error{};
        EXPECT_EQ(waste_session_create(m.model, &c, &error), WASTE_ERR_BUDGET);
        EXPECT_EQ(c, nullptr);
        EXPECT_NE(std::string(error.message).find("holds 2"), std::string::npos) << error.message;
        a.reset();
        SessionPtr d = new_session(m.model);
        EXPECT_TRUE(d);
    }
    {
        Model m(path, 0, 0);  // 0: one planned, not enforced
        ASSERT_EQ(m.status, WASTE_OK) << m.message;
        std::vector<SessionPtr> sessions;
        for (int i = 0; i < 4; ++i) sessions.push_back(new_session(m.model));
        for (const SessionPtr& s : sessions) EXPECT_TRUE(s);
    }
    Model too_many(path, 1025, 0);
    EXPECT_EQ(too_many.status, WASTE_ERR_INVALID_ARGUMENT);
    EXPECT_NE(too_many.message.find("1025"), std::string::npos) << too_many.message;
}

TEST(Snapshot, RestoreRefusesAnotherModelsSnapshotAndLeavesTheSessionAsItWas) {
    Model a(synth("tiny").path, 0, plenty), b(synth("tiny").path, 0, plenty);
    ASSERT_EQ(a.status, WASTE_OK) << a.message;
    ASSERT_EQ(b.status, WASTE_OK) << b.message;
    SessionPtr from = new_session(a.model), into = new_session(b.model), twin = new_session(b.model);
    eval(from.get(), tokens(20, 13));
    const SnapshotPtr snapshot = take(from.get());
    eval(into.get(), tokens(30, 14));
    eval(twin.get(), tokens(30, 14));
    waste_error error{};
    EXPECT_EQ(waste_session_restore(into.get(), snapshot.get(), &error), WASTE_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(error.message).find("another model"), std::string::npos) << error.message;
    EXPECT_EQ(waste_session_position(into.get()), 30u);
    EXPECT_TRUE(same_bits(continue_greedy(into.get(), 4).logits, continue_greedy(twin.get(), 4).logits));
    EXPECT_EQ(waste_session_restore(nullptr, snapshot.get(), &error), WASTE_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(waste_session_restore(into.get(), nullptr, &error), WASTE_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(waste_session_snapshot(nullptr, nullptr, &error), WASTE_ERR_INVALID_ARGUMENT);
    waste_snapshot_free(nullptr);
    EXPECT_EQ(waste_snapshot_bytes(nullptr), 0u);
    EXPECT_EQ(waste_snapshot_position(nullptr), 0u);
}

TEST(Snapshot, ASnapshotMayBeFreedAfterItsModelIsClosed) {
    // The reserve is shared with the snapshot (the sanitizer builds check
    // that nothing freed is touched).
    auto m = std::make_unique<Model>(synth("tiny").path, 0, plenty);
    ASSERT_EQ(m->status, WASTE_OK) << m->message;
    SessionPtr s = new_session(m->model);
    eval(s.get(), tokens(10, 15));
    SnapshotPtr snapshot = take(s.get());
    s.reset();
    m.reset();
    EXPECT_EQ(waste_snapshot_position(snapshot.get()), 10u);
    snapshot.reset();
}

TEST(Snapshot, SnapshotsFreedOnAnotherThreadDuringEngineCalls) {
    // The documented rule: waste_snapshot_free touches no session, so it may
    // run while another thread evaluates and takes new snapshots; the
    // reserve's accounting (atomic) ends where it began. The tsan preset
    // runs this (a threaded test) to find any race.
    uint64_t one = 0;  // a snapshot at the last position, 28
    {
        Model probe(synth("tiny").path, 0, 0);
        ASSERT_EQ(probe.status, WASTE_OK) << probe.message;
        one = waste_model_snapshot_bytes(probe.model, 28);
    }
    Model m(synth("tiny").path, 0, 16 * one);  // exactly 16 of them
    ASSERT_EQ(m.status, WASTE_OK) << m.message;
    SessionPtr s = new_session(m.model);
    eval(s.get(), tokens(20, 17));
    std::vector<waste_snapshot*> taken;
    for (int i = 0; i < 8; ++i) taken.push_back(take(s.get()).release());
    std::thread freer([&] {
        for (waste_snapshot* snapshot : taken) waste_snapshot_free(snapshot);
    });
    std::vector<SnapshotPtr> more;
    for (int i = 0; i < 8; ++i) {
        const int32_t next = 5 + i;
        waste_error error{};
        EXPECT_EQ(waste_session_eval(s.get(), &next, 1, &error), WASTE_OK) << error.message;
        more.push_back(take(s.get()));
    }
    freer.join();
    for (const SnapshotPtr& snapshot : more) EXPECT_TRUE(snapshot);
    more.clear();
    // everything was given back: the reserve holds 16 again, not a byte more
    std::vector<SnapshotPtr> refill;
    for (int i = 0; i < 16; ++i) refill.push_back(take(s.get()));
    for (const SnapshotPtr& snapshot : refill) EXPECT_TRUE(snapshot);
    waste_snapshot* extra = nullptr;
    waste_error error{};
    EXPECT_EQ(waste_session_snapshot(s.get(), &extra, &error), WASTE_ERR_BUDGET);
}

// --------------------------------------------------------------- plan

TEST(Snapshot, ThePlanCountsEverySessionAndTheReserve) {
    for (const char* preset : presets) {
        SCOPED_TRACE(preset);
        const std::string& path = synth(preset).path;
        const json one = plan_of(path, 0, 0);
        const json four = plan_of(path, 4, 5000000);
        ASSERT_TRUE(one.contains("floor_bytes") && four.contains("floor_bytes"));
        EXPECT_EQ(one["sessions"], 1);
        EXPECT_EQ(one["snapshot_bytes"], 0);
        EXPECT_EQ(four["sessions"], 4);
        EXPECT_EQ(four["snapshot_bytes"], 5000000);
        const uint64_t state = one["session_state_bytes"].get<uint64_t>(), scratch = one["session_scratch_bytes"].get<uint64_t>();
        EXPECT_EQ(one["state_bytes"].get<uint64_t>(), state);
        EXPECT_EQ(four["session_state_bytes"].get<uint64_t>(), state);
        EXPECT_EQ(four["state_bytes"].get<uint64_t>(), 4 * state);
        // With several sessions each workspace also holds a batched decode
        // step's rows of lookup tables (one a session, up to 8): more scratch each.
        const uint64_t scratch_each = four["session_scratch_bytes"].get<uint64_t>();
        EXPECT_GT(scratch_each, scratch);
        EXPECT_EQ(four["scratch_bytes"].get<uint64_t>() - one["scratch_bytes"].get<uint64_t>(), 4 * scratch_each - scratch);
        EXPECT_EQ(four["floor_bytes"].get<uint64_t>(),
                  one["floor_bytes"].get<uint64_t>() + 3 * state + 4 * scratch_each - scratch + 5000000);
        const uint64_t parts = four["trunk_bytes"].get<uint64_t>() + four["state_bytes"].get<uint64_t>() +
                               four["scratch_bytes"].get<uint64_t>() + four["io_bytes"].get<uint64_t>() +
                               four["runtime_bytes"].get<uint64_t>() + four["snapshot_bytes"].get<uint64_t>() +
                               four["min_expert_cache"].get<uint64_t>();
        EXPECT_EQ(four["floor_bytes"].get<uint64_t>(), parts);
        // the expert cache is what the budget leaves: the same budget, less cache
        const uint64_t budget = four["floor_bytes"].get<uint64_t>() + 100000;
        EXPECT_GT(plan_of(path, 0, 0, budget)["expert_cache_bytes"].get<uint64_t>(),
                  plan_of(path, 4, 5000000, budget)["expert_cache_bytes"].get<uint64_t>());
    }
}

TEST(Snapshot, OpeningRefusesABudgetBelowTheFloorWithSessionsAndReserve) {
    const std::string& path = synth("tiny").path;
    const json plan = plan_of(path, 3, 2000000);
    const uint64_t floor = plan["floor_bytes"].get<uint64_t>();
    {
        Model below(path, 3, 2000000, floor - 1);
        EXPECT_EQ(below.status, WASTE_ERR_BUDGET);
        EXPECT_NE(below.message.find("3 sessions"), std::string::npos) << below.message;
        EXPECT_NE(below.message.find("snapshot reserve 2000000"), std::string::npos) << below.message;
    }
    Model at(path, 3, 2000000, floor);
    EXPECT_EQ(at.status, WASTE_OK) << at.message;
    Model huge(path, 1, (1ull << 50) + 1);
    EXPECT_EQ(huge.status, WASTE_ERR_INVALID_ARGUMENT);
}

TEST(Snapshot, PlanCoversWhatSnapshotsHold) {
    // waste_snapshot_bytes is what the reserve is charged; it must cover the
    // floats a snapshot really keeps (state at its position and the logits).
    const std::string& path = synth("tiny-k3").path;
    Model m(path, 0, plenty);
    ASSERT_EQ(m.status, WASTE_OK) << m.message;
    SessionPtr s = new_session(m.model);
    eval(s.get(), tokens(100, 16));
    const SnapshotPtr snapshot = take(s.get());
    waste_test::TempDir tmp;
    waste_error error{};
    ASSERT_EQ(waste_state_save(s.get(), (tmp / "s.state").c_str(), &error), WASTE_OK) << error.message;
    // the state file holds the same fields plus a 64-byte header and an i32
    // per MLA layer, and the block residuals in use only; the snapshot adds
    // the logits
    const uint64_t file = waste_test::read_file(tmp / "s.state").size();
    const uint64_t vocab = logits_of(s.get()).size();
    EXPECT_GE(waste_snapshot_bytes(snapshot.get()), file - 64 - 4 * 4 + 4 * vocab);
    // and not much more: the whole block residuals and 256 bytes of handle
    EXPECT_LE(waste_snapshot_bytes(snapshot.get()), file + 4 * vocab + 4 * 128 * 8 + 256);
}

// ------------------------------------------------------------ Qwen3-MoE

// A tiny Qwen3-MoE container (GQA: 4 query heads over 2 key/value heads of
// 16; layer 1 dense via mlp_only_layers), converted from a checkpoint the
// PyTorch reference's writer makes (python/waste_ref/hf_families.py).
const std::string& qwen3_container() {
    static waste_test::TempDir dir;
    static std::string path;
    if (path.empty()) {
        const std::string ckpt = (dir / "ckpt").string(), out = (dir / "qwen3.waste").string();
        const std::string command =
            "cd '" + (waste_test::source_dir() / "python").string() +
            "' && /usr/bin/python3 -c \"from waste_ref import hf_families, qwen3_moe; "
            "hf_families.write_checkpoint('" + ckpt + "', 'qwen3_moe', qwen3_moe.tiny_config(vocab_size=320, "
            "num_hidden_layers=3, num_key_value_heads=2, moe_intermediate_size=24, mlp_only_layers=[1]), seed=11)\"" +
            " && '" + waste_test::cli_path().string() + "' convert '" + ckpt + "' '" + out +
            "' --sample-experts 8 --train-vectors 8192 --iterations 8";
        std::string output;
        EXPECT_EQ(waste_test::run_command(command, &output), 0) << command << "\n" << output;
        path = out;
    }
    return path;
}

TEST(Snapshot, Qwen3StateFileAndSnapshotRoundTripsAreBitExact) {
    // The GQA key/value cache travels in the state file (after its layer's
    // i32 n_kv, the header's two last words saying num_key_value_heads and
    // head_dim) and in snapshots: a session loaded or restored from either
    // continues with the very bits of the original.
    Model m(qwen3_container(), 0, plenty);
    ASSERT_EQ(m.status, WASTE_OK) << m.message;
    SessionPtr a = new_session(m.model), loaded = new_session(m.model), restored = new_session(m.model, 1);
    eval(a.get(), tokens(70, 21));
    waste_test::TempDir tmp;
    waste_error error{};
    ASSERT_EQ(waste_state_save(a.get(), (tmp / "a.state").c_str(), &error), WASTE_OK) << error.message;
    const SnapshotPtr snapshot = take(a.get());
    const std::string bytes = waste_test::read_file(tmp / "a.state");
    ASSERT_GE(bytes.size(), 64u);
    uint32_t gqa_words[2] = {0, 0};
    std::memcpy(gqa_words, bytes.data() + 56, sizeof gqa_words);
    EXPECT_EQ(gqa_words[0], 2u);
    EXPECT_EQ(gqa_words[1], 16u);
    // 3 layers of [70][2][2*16] floats after an i32 each, and the residual stream [48]
    EXPECT_EQ(bytes.size(), 64u + 3 * (4 + 70 * 2 * 32 * 4) + 48 * 4);
    ASSERT_EQ(waste_state_load(loaded.get(), (tmp / "a.state").c_str(), &error), WASTE_OK) << error.message;
    ASSERT_EQ(waste_session_restore(restored.get(), snapshot.get(), &error), WASTE_OK) << error.message;
    ASSERT_EQ(waste_state_save(restored.get(), (tmp / "b.state").c_str(), &error), WASTE_OK) << error.message;
    EXPECT_TRUE(bytes == waste_test::read_file(tmp / "b.state"));
    const Continuation expected = continue_greedy(a.get(), 12);
    const Continuation from_file = continue_greedy(loaded.get(), 12);
    const Continuation from_snapshot = continue_greedy(restored.get(), 12);
    EXPECT_EQ(from_file.tokens, expected.tokens);
    EXPECT_EQ(from_snapshot.tokens, expected.tokens);
    EXPECT_TRUE(same_bits(from_file.logits, expected.logits));
    EXPECT_TRUE(same_bits(from_snapshot.logits, expected.logits));
}

TEST(Snapshot, Qwen3StateFileOfAnotherGqaShapeIsRefusedByName) {
    Model m(qwen3_container(), 0, plenty);
    ASSERT_EQ(m.status, WASTE_OK) << m.message;
    SessionPtr a = new_session(m.model), b = new_session(m.model);
    eval(a.get(), tokens(10, 22));
    waste_test::TempDir tmp;
    waste_error error{};
    ASSERT_EQ(waste_state_save(a.get(), (tmp / "a.state").c_str(), &error), WASTE_OK) << error.message;
    std::string bytes = waste_test::read_file(tmp / "a.state");
    const uint32_t other_heads = 1;
    std::memcpy(bytes.data() + 56, &other_heads, sizeof other_heads);
    waste_test::write_file(tmp / "b.state", bytes);
    EXPECT_EQ(waste_state_load(b.get(), (tmp / "b.state").c_str(), &error), WASTE_ERR_FORMAT);
    EXPECT_NE(std::string(error.message).find("num_key_value_heads 1"), std::string::npos) << error.message;
    EXPECT_EQ(waste_session_position(b.get()), 0u);
}

// ------------------------------------------------------------ gpt-oss

// A tiny gpt-oss container: layer 0 sliding (window 8), layer 1 full, GQA 2:1
// of head_dim 16, hidden 64, MXFP4 experts (python/waste_ref/hf_families.py).
const std::string& gpt_oss_container() {
    static waste_test::TempDir dir;
    static std::string path;
    if (path.empty()) {
        const std::string ckpt = (dir / "ckpt").string(), out = (dir / "gpt-oss.waste").string();
        const std::string command =
            "cd '" + (waste_test::source_dir() / "python").string() +
            "' && /usr/bin/python3 -c \"from waste_ref import hf_families, gpt_oss; "
            "hf_families.write_checkpoint('" + ckpt + "', 'gpt_oss', gpt_oss.tiny_config(vocab_size=320), seed=11)\"" +
            " && '" + waste_test::cli_path().string() + "' convert '" + ckpt + "' '" + out +
            "' --sample-experts 8 --train-vectors 8192 --iterations 8";
        std::string output;
        EXPECT_EQ(waste_test::run_command(command, &output), 0) << command << "\n" << output;
        path = out;
    }
    return path;
}

TEST(Snapshot, GptOssSlidingRingTravelsInStateFilesAndSnapshotsBitExact) {
    // A sliding layer's cache is a ring of window + 63 = 71 rows: after 100
    // tokens it has wrapped, and the state file holds those 71 rows (the full
    // layer 100); loading or restoring continues with the very bits.
    Model m(gpt_oss_container(), 0, plenty);
    ASSERT_EQ(m.status, WASTE_OK) << m.message;
    SessionPtr a = new_session(m.model), loaded = new_session(m.model), restored = new_session(m.model, 1);
    eval(a.get(), tokens(100, 23));
    waste_test::TempDir tmp;
    waste_error error{};
    ASSERT_EQ(waste_state_save(a.get(), (tmp / "a.state").c_str(), &error), WASTE_OK) << error.message;
    const SnapshotPtr snapshot = take(a.get());
    const std::string bytes = waste_test::read_file(tmp / "a.state");
    // [71][2][2*16] and [100][2][2*16] floats after an i32 each, and the residual stream [64]
    EXPECT_EQ(bytes.size(), 64u + (4 + 71 * 2 * 32 * 4) + (4 + 100 * 2 * 32 * 4) + 64 * 4);
    ASSERT_EQ(waste_state_load(loaded.get(), (tmp / "a.state").c_str(), &error), WASTE_OK) << error.message;
    ASSERT_EQ(waste_session_restore(restored.get(), snapshot.get(), &error), WASTE_OK) << error.message;
    ASSERT_EQ(waste_state_save(restored.get(), (tmp / "b.state").c_str(), &error), WASTE_OK) << error.message;
    EXPECT_TRUE(bytes == waste_test::read_file(tmp / "b.state"));
    const Continuation expected = continue_greedy(a.get(), 12);
    const Continuation from_file = continue_greedy(loaded.get(), 12);
    const Continuation from_snapshot = continue_greedy(restored.get(), 12);
    EXPECT_EQ(from_file.tokens, expected.tokens);
    EXPECT_EQ(from_snapshot.tokens, expected.tokens);
    EXPECT_TRUE(same_bits(from_file.logits, expected.logits));
    EXPECT_TRUE(same_bits(from_snapshot.logits, expected.logits));
}

// ------------------------------------------------------------ peak RSS

TEST(Snapshot, PeakRssStaysUnderTheBudgetWithSessionsAndAFullSnapshotReserve) {
#ifdef WASTE_UNDER_SANITIZER
    GTEST_SKIP() << "peak RSS under a sanitizer counts its shadow memory; measured in the release build";
#endif
    // `waste bench-reuse` holds one snapshot per session for the whole run,
    // with the reserve sized to exactly those snapshots, and prefills every
    // session fresh and resumed; the budget is the floor plus one token's
    // experts.
    const std::string& path = synth("tiny").path;
    constexpr uint32_t sessions = 3, history = 150, turn = 20;
    uint64_t snapshot = 0;
    {
        Model probe(path, 0, 0);
        ASSERT_EQ(probe.status, WASTE_OK) << probe.message;
        snapshot = waste_model_snapshot_bytes(probe.model, history);
    }
    const uint64_t reserve = sessions * snapshot;
    const json plan = plan_of(path, sessions, reserve);
    const uint64_t budget = plan["floor_bytes"].get<uint64_t>() + plan["working_set_bytes"].get<uint64_t>();
    const waste_test::ChildRun run = waste_test::run_child(
        {waste_test::cli_path().string(), "bench-reuse", path, "--history", std::to_string(history), "--turn",
         std::to_string(turn), "--sessions", std::to_string(sessions), "--snapshot-reserve", std::to_string(reserve),
         "--runs", "2", "--ctx", std::to_string(context), "--budget", std::to_string(budget), "--threads", "2",
         "--lut", "exact", "--json"});  // the library's default, which plan_of planned
    ASSERT_TRUE(run.exited_ok()) << run.describe();
    const json out = json::parse(run.output);
    EXPECT_EQ(out["snapshot_bytes_held"].get<uint64_t>(), reserve) << "the reserve should be full";
    EXPECT_TRUE(out["same_first_token"].get<bool>());
    std::printf("peak RSS %llu bytes, budget %llu (floor %llu with %u sessions and a %llu-byte snapshot reserve)\n",
                static_cast<unsigned long long>(run.peak_rss), static_cast<unsigned long long>(budget),
                static_cast<unsigned long long>(plan["floor_bytes"].get<uint64_t>()), sessions,
                static_cast<unsigned long long>(reserve));
    EXPECT_LE(run.peak_rss, budget) << run.output;
}

}  // namespace
