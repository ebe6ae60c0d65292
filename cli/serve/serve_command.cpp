// serve_command.cpp — `waste serve MODEL` (run as the waste-serve executable): the OpenAI-compatible HTTP server
// (docs/SERVE.md). It binds first, answers /health ("loading") while the
// model opens, prints the memory plan and the URL, serves until SIGINT or
// SIGTERM, then stops accepting, lets in-flight requests finish within a
// grace period (cancelling what is left) and exits 0.
#include <httplib.h>

#include <cstdio>
#include <cstdlib>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_common.h"
#include "http_connections.h"
#include "input_file.h"
#include "server_context.h"
#include "server_plan.h"
#include "stop_request.h"
#include "stream_options.h"

namespace waste_cli {

namespace {

using nlohmann::json;

// Why 10 s: long enough for a short answer in flight to finish cleanly,
// short enough for a process supervisor's stop timeout (systemd: 90 s).
constexpr int kShutdownGraceSeconds = 10;
// After the grace period every connection is cut and every generation
// cancelled; a request still running this much later is one whose work
// has no cancellation point (tokenizing or rendering a large body, decoding
// an image), and the process exits without it.
constexpr int kShutdownCutSeconds = 5;

// httplib's stop() does nothing before the listener thread has begun to
// listen (it checks is_running()), so a stop that came first left the
// listener accepting forever: a model that failed to open at once hung the
// process instead of exiting 1. Wait for it to run, then stop it.
void stop_listening(waste_serve::HttpServer& server) {
    while (!server.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    server.stop();
}

struct ServeArgs {
    std::string model;
    std::string host = "127.0.0.1";
    int port = 8080;
    std::string model_id;
    std::string api_key;
    std::string api_key_file;
    uint32_t max_tokens = 4096;
    // --temp, --top-p, --top-k, --min-p: the sampling of requests that name
    // none, over the model's (none given: the model's)
    std::optional<double> temperature, top_p, min_p;
    std::optional<uint32_t> top_k;
    bool no_thinking = false;
    std::string chat_template;  // --chat-template FILE ("" = the container's)
    std::string image_dir;
    bool allow_local_images = false;  // replaced by --image-dir: refused with the reason
    bool vision = false;
    uint32_t parallel = 1;
    uint32_t queue = 64;
    std::string max_body = "16M";
    std::string request_memory;  // "" = server_plan.h's default
    uint32_t max_connections = 0;  // 0 = parallel + queue + 8
    size_t max_idle_connections = waste_serve::ConnectionLimits{}.max_idle_connections;
    double request_timeout = 60;
    uint32_t idle_timeout = 5;
    std::string prompt_cache = "64M";
    std::string budget;
    uint32_t context = 4096;
    unsigned threads = 0;
    bool verify = false;
    std::string policy = "default";
    StreamArgs stream;
};

bool is_loopback(const std::string& host) {
    return host == "127.0.0.1" || host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

ServerPlan server_plan(const ServeArgs& args) {
    return server_plan_of(args.parallel, args.queue, args.max_body, args.request_memory);
}

void print_plan(waste_model* model, const ServeArgs& args, const waste_open_options& options) {
    waste_plan_options plan_options{};
    plan_options.context_length = options.context_length;
    plan_options.budget_bytes = options.budget_bytes;
    char* text = nullptr;
    if (waste_model_plan_json(model, &plan_options, &text, nullptr) != WASTE_OK) return;
    const json plan = json::parse(take_string(text), nullptr, false);
    if (!plan.is_object()) return;
    fmt::print("memory plan:\n");
    for (const auto& [key, value] : plan.items())
        if (value.is_number_unsigned() && key.size() > 6 && key.compare(key.size() - 6, 6, "_bytes") == 0)
            fmt::print("  {:<26}{}\n", key.substr(0, key.size() - 6), format_bytes(value.get<uint64_t>()));
    fmt::print("  {:<26}{} x {} tokens\n", "sessions (--parallel)", args.parallel, options.context_length);
    fmt::print("  {:<26}{}\n", "prompt reuse (snapshots)", format_bytes(options.snapshot_bytes));
    fmt::print("{}", server_plan_text(server_plan(args), plan.value("budget_bytes", uint64_t{0}), "  ", 26));
}

// The sampling of requests that name none: the server's flags over the
// model's (waste_model_sampling_defaults), and a line saying where each came
// from.
waste_serve::SamplingDefaults sampling_defaults(waste_model* model, const ServeArgs& args) {
    waste_sampler_options o;
    uint32_t from_release = 0;
    waste_error error{};
    if (waste_model_sampling_defaults(model, &o, &from_release, &error) != WASTE_OK) fail_with(error, "the model's sampling defaults");
    waste_serve::SamplingDefaults d{args.temperature.value_or(o.temperature), args.top_p.value_or(o.top_p), args.top_k.value_or(o.top_k),
                                    args.min_p.value_or(o.min_p)};
    auto from = [&](bool flag, uint32_t bit) {
        return flag ? "flag" : (from_release & bit) ? "generation_config.json" : "engine";
    };
    fmt::print("waste serve: requests that name no sampling get temperature {} ({}), top_p {} ({}), top_k {} ({}), min_p {} ({})\n",
               d.temperature, from(args.temperature.has_value(), WASTE_SAMPLING_TEMPERATURE), d.top_p,
               from(args.top_p.has_value(), WASTE_SAMPLING_TOP_P), d.top_k, from(args.top_k.has_value(), WASTE_SAMPLING_TOP_K),
               d.min_p, from(args.min_p.has_value(), WASTE_SAMPLING_MIN_P));
    return d;
}

// The key clients must send: --api-key-file's first line, $WASTE_API_KEY, or
// --api-key (which every user of the machine can read in ps: a warning
// says so). "" for none.
std::string resolve_api_key(const ServeArgs& args) {
    if (!args.api_key_file.empty()) {
        if (!args.api_key.empty()) throw RuntimeFailure{"--api-key and --api-key-file: give one"};
        std::string text = read_input_file(args.api_key_file, 4096, "the API key file");
        text = text.substr(0, text.find_first_of("\r\n"));
        while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.pop_back();
        if (text.empty()) throw RuntimeFailure{fmt::format("{}: the API key file's first line is empty", args.api_key_file)};
        return text;
    }
    if (!args.api_key.empty()) {
        fmt::print(stderr, "waste serve: warning: --api-key on the command line is visible to every user of this machine "
                           "(ps, /proc); use --api-key-file FILE or $WASTE_API_KEY\n");
        std::fflush(stderr);  // now, not at exit: Wine's C runtime buffers stderr sent to a pipe
        return args.api_key;
    }
    const char* key = std::getenv("WASTE_API_KEY");
    return key ? key : "";
}

int serve(const ServeArgs& args) {
    waste_serve::prepare_stop_requests();  // before any thread starts

    waste_serve::ServerContext ctx;
    ctx.settings.api_key = resolve_api_key(args);
    ctx.settings.image_dir = args.image_dir;
    ctx.settings.parallel = args.parallel;
    ctx.settings.queue = args.queue;
    const ServerPlan plan = server_plan(args);
    ctx.settings.max_body = plan.max_body;
    if (waste_serve::body_reservation(plan.max_body) > request_memory(plan))
        throw RuntimeFailure{fmt::format("--max-body {} needs {} of request memory to be read, more than --request-memory {}",
                                         format_bytes(plan.max_body), format_bytes(waste_serve::body_reservation(plan.max_body)),
                                         format_bytes(request_memory(plan)))};
    ctx.request_memory = std::make_unique<waste_serve::RequestMemory>(request_memory(plan));
    ctx.engine_build = std::string("waste ") + waste_version();
    ctx.engine.model_id = args.model_id;
    if (ctx.engine.model_id.empty()) {
        std::string path = args.model;
        while (path.size() > 1 && path.back() == '/') path.pop_back();
        ctx.engine.model_id = path.substr(path.find_last_of('/') + 1);
    }
    ctx.engine.metrics = &ctx.metrics;
    ctx.engine.stepper = std::make_unique<waste_serve::BatchStepper>(ctx.engine.turn, ctx.metrics);
    ctx.engine.default_max_tokens = args.max_tokens;
    ctx.engine.thinking = !args.no_thinking;
    if (!args.chat_template.empty()) ctx.engine.chat_template = read_chat_template_file(args.chat_template);
    ctx.slots = std::make_unique<waste_serve::Slots>(args.parallel, args.queue, ctx.metrics);

    waste_serve::ConnectionLimits limits;
    limits.max_connections = args.max_connections ? args.max_connections : args.parallel + args.queue + 8;
    limits.max_idle_connections = args.max_idle_connections;
    limits.request_timeout = std::chrono::milliseconds(static_cast<int64_t>(args.request_timeout * 1000));
    limits.idle_timeout = std::chrono::seconds(args.idle_timeout);
    waste_serve::HttpServer server(limits);
    waste_serve::configure_http(server, ctx);
    const int port = server.bind(args.host, args.port);
    if (port <= 0) throw RuntimeFailure{fmt::format("cannot listen on {}:{} (in use, or not an address of this machine)", args.host, args.port)};
    if (!is_loopback(args.host) && ctx.settings.api_key.empty())
        fmt::print(stderr, "waste serve: warning: listening on {} without an API key: anyone who can reach this address can use the model "
                           "(set --api-key-file or $WASTE_API_KEY)\n", args.host);
    std::fflush(stderr);
    std::thread listener([&server] { server.listen_after_bind(); });
    const std::string url = fmt::format("http://{}:{}", args.host.find(':') != std::string::npos ? "[" + args.host + "]" : args.host, port);
    fmt::print("waste serve: loading {} (GET {}/health answers \"loading\" until ready)\n", args.model, url);
    std::fflush(stdout);

    std::vector<SessionHandle> sessions;
    ModelHandle model;
    TokenizerHandle tokenizer;
    try {
        waste_open_options options = model_open_options(args.context, args.threads, args.budget, args.verify, args.policy, args.stream);
        options.sessions = args.parallel;
        // Any request may constrain its reply: each slot's grammar and state,
        // and as many cached (grammar_cache.h).
        options.grammars = 2 * args.parallel;
        options.snapshot_bytes = parse_size(args.prompt_cache);
        options.vision = args.vision ? 1 : 0;  // each slot's session gets its image queue
        model = open_model(args.model, options);
        report_open(args.stream, model.get(), false);
        waste_error error{};
        waste_tokenizer* t = nullptr;
        if (waste_model_tokenizer(model.get(), nullptr, &t, &error) != WASTE_OK)
            fail_with(error, "the server needs the container's tokenizer");
        tokenizer.reset(t);
        StreamArgs others = args.stream;  // one route dump: the first session's
        others.dump_route.clear();
        for (uint32_t i = 0; i < args.parallel; ++i) {
            waste_session* session = nullptr;
            if (waste_session_create(model.get(), &session, &error) != WASTE_OK) fail_with(error, "cannot start a session");
            sessions.emplace_back(session);
            apply_session_options(i == 0 ? args.stream : others, session);
            ctx.engine.sessions.push_back(session);
        }
        char* info = nullptr;
        if (waste_model_info_json(model.get(), &info, &error) != WASTE_OK) fail_with(error, "cannot describe the model");
        ctx.engine.model_info = json::parse(take_string(info));
        ctx.engine.direct_io = ctx.engine.model_info.value("direct_io", false) == true;
        const size_t chunk = ctx.engine.model_info.value("prefill_chunk", size_t{64});
        ctx.engine.prefill_turn = args.parallel == 1 ? chunk : std::min<size_t>(chunk, 64);
        ctx.engine.sampling_defaults = sampling_defaults(model.get(), args);
        ctx.engine.model = model.get();
        ctx.engine.tokenizer = tokenizer.get();
        ctx.engine.eos_ids.resize(waste_tokenizer_eos_ids(tokenizer.get(), nullptr, 0));
        waste_tokenizer_eos_ids(tokenizer.get(), ctx.engine.eos_ids.data(), ctx.engine.eos_ids.size());
        ctx.engine.vision = args.vision;
        ctx.engine.grammars = std::make_unique<waste_serve::GrammarCache>(tokenizer.get(), args.parallel);
        ctx.engine.context_length = waste_session_context_length(sessions.front().get());
        if (options.snapshot_bytes > 0)
            ctx.engine.prompt_cache = std::make_unique<waste_serve::PromptCache>(model.get(), options.snapshot_bytes);
        print_plan(model.get(), args, options);
    } catch (...) {
        stop_listening(server);
        listener.join();
        throw;
    }
    ctx.ready = true;
    fmt::print("waste serve: {} ready at {}/v1 ({} slot{}, queue {}, request memory {}, {} connections{})\n", ctx.engine.model_id, url,
               args.parallel, args.parallel == 1 ? "" : "s", args.queue, format_bytes(ctx.request_memory->capacity()),
               limits.max_connections, ctx.settings.api_key.empty() ? "" : ", API key required");
    std::fflush(stdout);

    const std::string stop = waste_serve::wait_for_stop_request();
    fmt::print("waste serve: {} received: no new requests; in-flight ones have {} s to finish\n", stop, kShutdownGraceSeconds);
    std::fflush(stdout);
    ctx.slots->close();
    server.stop_reading();  // idle connections and requests still arriving end now
    bool stopped = false;
    std::mutex stop_mutex;
    std::condition_variable stop_done;
    std::thread deadline([&] {
        std::unique_lock lock(stop_mutex);
        if (stop_done.wait_for(lock, std::chrono::seconds(kShutdownGraceSeconds), [&] { return stopped; })) return;
        ctx.engine.cancel_all = true;  // generations end at their next token
        server.cut_all();              // writes fail, hang-up checks see it
        if (stop_done.wait_for(lock, std::chrono::seconds(kShutdownCutSeconds), [&] { return stopped; })) return;
        fmt::print(stderr, "waste serve: {} connection(s) still busy {} s after the grace period (work with no cancellation point); "
                           "exiting without them\n", server.open_connections(), kShutdownCutSeconds);
        std::fflush(stderr);
        std::fflush(stdout);
        std::_Exit(0);
    });
    stop_listening(server);
    listener.join();  // waits for the handler threads
    {
        std::lock_guard lock(stop_mutex);
        stopped = true;
    }
    stop_done.notify_all();
    deadline.join();
    ctx.engine.prompt_cache.reset();  // snapshots before the model
    ctx.engine.grammars.reset();      // compiled against the tokenizer
    ctx.engine.sessions.clear();
    sessions.clear();
    fmt::print("waste serve: stopped\n");
    return 0;
}

}  // namespace

void add_serve_command(CLI::App& app) {
    auto args = std::make_shared<ServeArgs>();
    CLI::App* cmd = app.add_subcommand("serve", "Serve the model over an OpenAI-compatible HTTP API (docs/SERVE.md)");
    cmd->add_option("MODEL", args->model, "Container directory")->required();
    cmd->add_option("--host", args->host, "Address to listen on (loopback by default)")->default_val("127.0.0.1");
    cmd->add_option("--port", args->port, "Port (0 = any free port, printed)")->default_val(8080)->check(CLI::Range(0, 65535));
    cmd->add_option("--model-id", args->model_id, "The model's name in the API")->default_str("the container directory's name");
    cmd->add_option("--api-key-file", args->api_key_file, "Require 'Authorization: Bearer KEY', KEY being FILE's first line (also $WASTE_API_KEY)")
        ->default_str("none");
    cmd->add_option("--api-key", args->api_key, "The key itself (visible to other users in ps: prefer --api-key-file)")->default_str("none");
    cmd->add_option("--max-tokens", args->max_tokens, "Reply length when a request names none")->default_val(4096)->check(CLI::Range(1, 1 << 24));
    const char* model_default = "the model's (generation_config.json, else the engine's: temperature 0.8, top-p 0.95, top-k 0, min-p 0)";
    cmd->add_option("--temp", args->temperature, "Sampling temperature of requests that name none (0 = greedy)")
        ->default_str(model_default)
        ->check(CLI::Range(0.0, 2.0));
    cmd->add_option("--top-p", args->top_p, "top_p of requests that name none")->default_str("the model's")->check(CLI::Range(0.0, 1.0));
    cmd->add_option("--top-k", args->top_k, "top_k of requests that name none (0 = off)")->default_str("the model's")->check(CLI::Range(0, 1 << 30));
    cmd->add_option("--min-p", args->min_p, "min_p of requests that name none (0 = off)")->default_str("the model's")->check(CLI::Range(0.0, 1.0));
    cmd->add_flag("--no-thinking", args->no_thinking, "Answer without a reasoning phase unless a request asks for one");
    cmd->add_option("--chat-template", args->chat_template, "A Jinja chat template file to render requests with instead of the container's")
        ->default_str("none");
    cmd->add_option("--image-dir", args->image_dir, "Let requests name image files under DIR (links resolved; never URLs)")
        ->default_str("none")
        ->check(CLI::ExistingDirectory);
    cmd->add_flag("--allow-local-images", args->allow_local_images, "Replaced by --image-dir DIR");
    cmd->add_flag("--vision", args->vision, "Load the vision tower: image_url parts are read (base64 data: URLs; files under --image-dir)");
    cmd->add_option("--parallel", args->parallel, "Requests generating at once (one session each)")->default_val(1)->check(CLI::Range(1, 256));
    cmd->add_option("--queue", args->queue, "Requests that may wait for a slot; more are refused with 503")->default_val(64)->check(CLI::Range(0, 4096));
    cmd->add_option("--max-body", args->max_body, "Largest request body (Content-Length); larger is 413 before it is read")
        ->default_val("16M");
    cmd->add_option("--request-memory", args->request_memory,
                    "RAM for what requests hold outside the model's plan (bodies, parsed JSON, prompts, images); "
                    "what does not fit is 503 or 413 before it is made")
        ->default_str("max((parallel + queue) x 8M, 32 x max-body)");
    cmd->add_option("--max-connections", args->max_connections,
                    "Connections served at once; past it only GET /health is answered (others 503)")
        ->default_str("parallel + queue + 8")
        ->check(CLI::Range(1, 65536));
    cmd->add_option("--max-idle-connections", args->max_idle_connections,
                    "Kept-alive connections that may wait for their next request (no thread each); past it answers close theirs")
        ->capture_default_str()
        ->check(CLI::Range(0, 65536));
    cmd->add_option("--request-timeout", args->request_timeout,
                    "Seconds a request's line, headers and body may take to arrive (408 after)")
        ->default_val(60)
        ->check(CLI::Range(0.1, 3600.0));
    cmd->add_option("--idle-timeout", args->idle_timeout,
                    "Seconds a connection may wait for its next request (advertised in Keep-Alive; "
                    "kept-alive ones are closed a second after it)")
        ->default_val(5)
        ->check(CLI::Range(1, 3600));
    cmd->add_option("--prompt-cache", args->prompt_cache, "RAM for stored prompts (prompt reuse; 0 = off)")->default_val("64M");
    cmd->add_option("--budget", args->budget, "RAM budget (e.g. 8G)")->default_str("the recommended budget (waste plan)");
    cmd->add_option("--ctx", args->context, "Context length in tokens (per session)")->default_val(4096)->check(CLI::Range(1, 1 << 24));
    add_threads_option(cmd, args->threads);
    cmd->add_flag("--verify", args->verify, "Check each expert record's CRC-32 when it is read");
    cmd->add_option("--policy", args->policy, "Expert cache policy: reuse (ours, the default), lru, lfru")->default_val("default");
    add_stream_options(cmd, args->stream);
    cmd->callback([args] {
        if (args->prompt_cache.empty()) throw CLI::ValidationError("--prompt-cache", "give a size, or 0 for none");
        if (args->allow_local_images)
            throw CLI::ValidationError("--allow-local-images",
                                       "replaced by --image-dir DIR: requests may name image files under DIR only");
        parse_size(args->prompt_cache);
        if (parse_size(args->max_body) == 0) throw CLI::ValidationError("--max-body", "give a size over 0");
        if (!args->request_memory.empty()) parse_size(args->request_memory);
        serve(*args);
    });
}

}  // namespace waste_cli
