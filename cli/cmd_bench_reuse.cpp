// cmd_bench_reuse.cpp — `waste bench-reuse`: what prompt reuse buys a chat
// client. Time to first token of a conversation's next turn after a history
// of --history tokens, two ways: a fresh prefill of history + turn (what a
// stateless server does), and a restore of the snapshot taken at the end of
// the history followed by a prefill of the turn only (what `waste serve`
// does with prompt reuse). Medians of --runs runs, the two alternated.
//
// With --sessions N it holds N conversations at once, one session and one
// snapshot each, with the snapshot reserve sized to exactly those snapshots
// unless --snapshot-reserve says otherwise: the memory of a server with
// --parallel N that keeps one snapshot per slot (tests/snapshot_test.cpp
// measures its peak RSS against the budget this way).
//
// The ids are random (seeded): what is measured is the prefill, which does
// not depend on what the tokens say.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_common.h"
#include "stream_options.h"

namespace waste_cli {
namespace {

using nlohmann::json;

struct ReuseArgs {
    std::string model;
    std::string budget;
    std::string policy = "default";
    std::string snapshot_reserve;  // empty: exactly the sessions' snapshots
    unsigned threads = 0;
    uint32_t context = 0;          // 0: history + turn
    int history = 1000;
    int turn = 32;
    int sessions = 1;
    int runs = 5;
    uint32_t seed = 1;
    bool warm = true;
    bool json_output = false;
    StreamArgs stream;
};

struct SnapshotCloser {
    void operator()(waste_snapshot* snapshot) const { waste_snapshot_free(snapshot); }
};
using SnapshotHandle = std::unique_ptr<waste_snapshot, SnapshotCloser>;

std::vector<int32_t> random_ids(std::mt19937& random, int count, int vocab) {
    std::vector<int32_t> ids(static_cast<size_t>(count));
    for (int32_t& id : ids) id = static_cast<int32_t>(random() % static_cast<uint32_t>(vocab));
    return ids;
}

struct Timed {
    double ms = 0;
    int32_t token = -1;
};

template <typename Work>
Timed timed(waste_session* session, Work&& work) {
    const auto start = std::chrono::steady_clock::now();
    work();
    Timed t;
    t.token = greedy_token(session);  // when a streaming client sees something
    t.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return t;
}

void run_bench_reuse(const ReuseArgs& args) {
    waste_error error{};
    const uint32_t context = args.context ? args.context : static_cast<uint32_t>(args.history + args.turn);
    if (static_cast<uint64_t>(args.history) + args.turn > context)
        throw CLI::ValidationError("--ctx", fmt::format("{} tokens do not hold a history of {} and a turn of {}", context,
                                                        args.history, args.turn));
    waste_open_options options = model_open_options(context, args.threads, args.budget, /*verify=*/false, args.policy, args.stream);
    options.sessions = static_cast<uint32_t>(args.sessions);
    uint64_t one_snapshot = 0;
    {
        waste_open_options metadata = options;
        metadata.flags |= WASTE_OPEN_METADATA_ONLY;
        one_snapshot = waste_model_snapshot_bytes(open_model(args.model, metadata).get(), static_cast<uint32_t>(args.history));
    }
    options.snapshot_bytes = args.snapshot_reserve.empty() ? one_snapshot * static_cast<uint64_t>(args.sessions)
                                                           : parse_size(args.snapshot_reserve);
    ModelHandle model = open_model(args.model, options);
    report_open(args.stream, model.get(), args.json_output);
    char* text = nullptr;
    if (waste_model_info_json(model.get(), &text, &error) != WASTE_OK) fail_with(error, "info");
    const json info = json::parse(take_string(text));
    const int vocab = info["vocab"].get<int>();
    uint64_t warmed = 0;
    if (args.warm && waste_model_warm_cache(model.get(), &warmed, &error) != WASTE_OK) fail_with(error, "warming the cache");

    // Each conversation: a session, its history, the snapshot at its end and
    // the next turn.
    struct Conversation {
        SessionHandle session;
        std::vector<int32_t> history, turn, whole;
        SnapshotHandle snapshot;
    };
    std::mt19937 random(args.seed);
    std::vector<Conversation> conversations(static_cast<size_t>(args.sessions));
    uint64_t held = 0;
    for (Conversation& c : conversations) {
        waste_session* raw = nullptr;
        if (waste_session_create(model.get(), &raw, &error) != WASTE_OK) fail_with(error, "session");
        c.session.reset(raw);
        apply_session_options(args.stream, raw);
        c.history = random_ids(random, args.history, vocab);
        c.turn = random_ids(random, args.turn, vocab);
        c.whole = c.history;
        c.whole.insert(c.whole.end(), c.turn.begin(), c.turn.end());
        if (!c.history.empty() && waste_session_eval(raw, c.history.data(), c.history.size(), &error) != WASTE_OK)
            fail_with(error, "history");
        waste_snapshot* snapshot = nullptr;
        if (waste_session_snapshot(raw, &snapshot, &error) != WASTE_OK) fail_with(error, "snapshot");
        c.snapshot.reset(snapshot);
        held += waste_snapshot_bytes(snapshot);
    }

    std::vector<double> fresh_ms, reuse_ms;
    bool same_first_token = true;
    for (int run = 0; run < args.runs; ++run) {
        for (Conversation& c : conversations) {
            waste_session* s = c.session.get();
            const Timed fresh = timed(s, [&] {
                if (waste_session_reset(s, &error) != WASTE_OK) fail_with(error, "reset");
                if (waste_session_eval(s, c.whole.data(), c.whole.size(), &error) != WASTE_OK) fail_with(error, "fresh prefill");
            });
            const Timed reuse = timed(s, [&] {
                if (waste_session_restore(s, c.snapshot.get(), &error) != WASTE_OK) fail_with(error, "restore");
                if (!c.turn.empty() && waste_session_eval(s, c.turn.data(), c.turn.size(), &error) != WASTE_OK)
                    fail_with(error, "turn prefill");
            });
            fresh_ms.push_back(fresh.ms);
            reuse_ms.push_back(reuse.ms);
            same_first_token = same_first_token && fresh.token == reuse.token;
        }
    }
    for (Conversation& c : conversations) finish_stream(args.stream, model.get(), c.session.get());

    json out;
    out["model"] = args.model;
    out["arch"] = info["arch"];
    out["threads"] = args.threads;
    out["cached_records"] = warmed;
    out["history"] = args.history;
    out["turn"] = args.turn;
    out["chunk"] = info["prefill_chunk"];
    out["sessions"] = args.sessions;
    out["runs"] = args.runs;
    out["snapshot_bytes"] = one_snapshot;
    out["snapshot_reserve_bytes"] = options.snapshot_bytes;
    out["snapshot_bytes_held"] = held;
    out["fresh_ms"] = fresh_ms;
    out["reuse_ms"] = reuse_ms;
    out["median_fresh_ms"] = median(fresh_ms);
    out["median_reuse_ms"] = median(reuse_ms);
    out["speedup"] = median(reuse_ms) > 0 ? median(fresh_ms) / median(reuse_ms) : 0.0;
    out["same_first_token"] = same_first_token;
    if (args.json_output) {
        fmt::print("{}\n", out.dump());
        return;
    }
    fmt::print("model        {} ({}), {} threads, {} expert records cached\n", args.model, info["arch"].get<std::string>(),
               args.threads ? std::to_string(args.threads) : "all", warmed);
    fmt::print("turn 2       {} history tokens + {} new, chunks of {}, {} session{}, {} runs\n", args.history, args.turn,
               info["prefill_chunk"].get<uint32_t>(), args.sessions, args.sessions == 1 ? "" : "s", args.runs);
    fmt::print("fresh        {:.2f} ms to the first token (median): prefill of all {} tokens\n", median(fresh_ms),
               args.history + args.turn);
    fmt::print("reuse        {:.2f} ms to the first token (median): restore + prefill of {} tokens\n", median(reuse_ms),
               args.turn);
    fmt::print("speedup      {:.1f}x; snapshots {} each, {} held of a {} reserve; first tokens {}\n",
               out["speedup"].get<double>(), format_bytes(one_snapshot), format_bytes(held),
               format_bytes(options.snapshot_bytes), same_first_token ? "identical" : "DIFFER");
}

}  // namespace

void add_bench_reuse_command(CLI::App& app) {
    auto args = std::make_shared<ReuseArgs>();
    CLI::App* bench = app.add_subcommand(
        "bench-reuse", "Measure prompt reuse: time to first token of a next turn, fresh prefill vs snapshot restore");
    bench->add_option("MODEL", args->model, "Container directory")->required();
    bench->add_option("--history", args->history, "Tokens of conversation before the turn (random ids)")
        ->default_val(1000)
        ->check(CLI::Range(0, 1 << 24));
    bench->add_option("--turn", args->turn, "Tokens of the new turn")->default_val(32)->check(CLI::Range(1, 1 << 24));
    bench->add_option("--sessions", args->sessions, "Conversations held at once, one session and one snapshot each")
        ->default_val(1)
        ->check(CLI::Range(1, 1024));
    bench->add_option("--snapshot-reserve", args->snapshot_reserve, "RAM reserved for snapshots (e.g. 64M)")
        ->default_str("exactly the sessions' snapshots");
    bench->add_option("--runs", args->runs, "Runs per conversation; times are the median")->default_val(5)->check(CLI::Range(1, 1000));
    bench->add_option("--ctx", args->context, "Context length in tokens")->default_str("history + turn")->check(CLI::Range(1, 1 << 24));
    add_threads_option(bench, args->threads);
    bench->add_option("--budget", args->budget, "RAM budget (e.g. 8G)")->default_str("the recommended budget (waste plan)");
    bench->add_option("--policy", args->policy, "Expert cache policy: reuse (ours, the default), lru, lfru")->default_val("default");
    bench->add_option("--seed", args->seed, "Seed of the random ids")->default_val(1);
    bench->add_flag("!--no-warm", args->warm, "Do not fill the expert cache before timing");
    bench->add_flag("--json", args->json_output, "Print JSON (documented in docs/CLI.md)");
    add_stream_options(bench, args->stream);
    bench->callback([args] { run_bench_reuse(*args); });
}

}  // namespace waste_cli
