// http_server.cpp — the HTTP surface of `waste serve` on cpp-httplib:
// limits checked before a body is read, the API key, OpenAI's error shape
// for every failure, and the routes (k3-chat.md §13).
#include <httplib.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include "api_error.h"
#include "auth.h"
#include "http_connections.h"
#include "json_body.h"
#include "request_images.h"
#include "response_format.h"
#include "tool_call_plan.h"
#include "server_context.h"
#include "sse.h"

namespace waste_serve {

namespace {

using nlohmann::json;

void send_error(httplib::Response& res, const ApiError& error) {
    res.status = error.status;
    res.set_content(dump(error.to_json()), "application/json");
}

// §13.23: a request refused without reading its body ends its connection
// after the refusal (Connection: close, then the server closes it), or the
// unread bytes would be parsed as the next request (a client could smuggle
// one inside the body).
void close_after_response(httplib::Response& res) {
    res.set_header("Connection", "close");
    if (Connection* connection = current_connection()) connection->close_after_response = true;
}

// The socket the current request arrived on (INVALID_SOCKET outside one).
Socket request_socket() {
    const Connection* connection = current_connection();
    return connection ? connection->socket : INVALID_SOCKET;
}

// The current request's share of --request-memory (an empty one where the
// request reserved nothing yet: a GET).
RequestMemory::Reservation& request_memory(ServerContext& ctx) {
    Connection* connection = current_connection();
    if (!connection) throw ApiError{500, "a request outside its connection", "engine_error", "", "engine_error"};
    if (!connection->memory) connection->memory.emplace(ctx.request_memory.get(), 0);
    return *connection->memory;
}

const char* error_type_for(int status) {
    switch (status) {
        case 401: return "authentication_error";
        case 404: return "not_found_error";
        case 405: return "invalid_request_error";
        case 500: return "engine_error";
        case 503: return "unavailable_error";
        default: return "invalid_request_error";
    }
}

void send_unavailable(httplib::Response& res, const std::string& message, const char* code) {
    res.set_header("Retry-After", "1");
    send_error(res, ApiError{503, message, "unavailable_error", "", code});
}

// Wraps a handler: counts it, refuses while loading, turns ApiError and
// anything else thrown into OpenAI's error object.
template <typename Handler>
auto endpoint(ServerContext& ctx, bool needs_model, Handler handler) {
    return [&ctx, needs_model, handler](const httplib::Request& req, httplib::Response& res) {
        mark_answering();
        ++ctx.metrics.requests;
        if (needs_model && !ctx.ready.load()) {
            send_unavailable(res, "the model is still loading; retry shortly (GET /health says when it is ready)", "model_loading");
            return;
        }
        try {
            handler(req, res);
        } catch (const ApiError& error) {
            if (error.status == 503) res.set_header("Retry-After", "1");
            send_error(res, error);
        } catch (const std::bad_alloc&) {
            send_error(res, ApiError{500, "out of memory while serving the request", "engine_error", "", "engine_error"});
        } catch (const std::exception& e) {
            send_error(res, ApiError{500, std::string("the server failed: ") + e.what(), "engine_error", "", "engine_error"});
        }
        if (res.status >= 400) ++ctx.metrics.requests_error;
    };
}

// A POST route: its body is read here into a string of exactly its
// declared length (which pre-routing checked against --max-body and
// reserved in request memory; httplib's own reading grows a string by
// doubling, up to twice the body), then handled as endpoint() does. A body
// that does not arrive whole (the request's deadline, a client gone) is
// httplib's 400, which the error handler words (408) and ends the
// connection.
template <typename Handler>  // Handler(const std::string& body, httplib::Response&)
auto post_endpoint(ServerContext& ctx, Handler handler) {
    return [&ctx, handler](const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader) {
        const uint64_t length = std::strtoull(req.get_header_value("Content-Length").c_str(), nullptr, 10);
        std::string body;
        body.reserve(length);
        const bool whole = reader([&](const char* data, size_t size) {
            if (body.size() + size > length) return false;
            body.append(data, size);
            return true;
        });
        if (!whole || body.size() != length) {
            res.status = 400;
            return;
        }
        endpoint(ctx, true, [&](const httplib::Request&, httplib::Response& response) { handler(body, response); })(req, res);
    };
}

json model_object(const ServerContext& ctx) {
    const json& info = ctx.engine.model_info;
    json shape = json::object();
    for (const char* key : {"architecture", "layers", "hidden", "experts", "experts_per_token", "vocab", "parameters",
                            "quantization", "container_bytes"})
        if (info.contains(key)) shape[key] = info[key];
    shape["context_length"] = ctx.engine.context_length;
    shape["info"] = info;
    return {{"id", ctx.engine.model_id}, {"object", "model"}, {"created", unix_now()}, {"owned_by", "waste"}, {"waste", shape}};
}

// What tokenizing text holds at its peak: the ids (4 bytes a token, at most
// a token a byte) and the pre-tokenizer's pieces. Why 12 bytes a byte:
// `waste tokenize --file` on kimi-mini's tokenizer peaked at 7.7 bytes a
// byte past the text itself on 13 MB of random characters (a token a
// byte), 3.9 on 16 MB of "a a a ..." and 2.9 on 16 MB of English words.
constexpr uint64_t kTokenizingBytesPerByte = 12;

std::vector<int32_t> plain_tokens(ServerContext& ctx, const std::string& text) {
    const Engine& engine = ctx.engine;
    request_memory(ctx).grow(kTokenizingBytesPerByte * text.size(), "tokenizing the text");
    int32_t* ids = nullptr;
    size_t count = 0;
    waste_error error{};
    if (waste_tokenizer_tokenize(engine.tokenizer, text.data(), text.size(), 0, &ids, &count, &error) != WASTE_OK)
        throw bad_request(std::string("cannot tokenize the text: ") + error.message);
    std::vector<int32_t> out(ids, ids + count);
    waste_tokens_free(ids);
    return out;
}

// Blocking generation on a slot; nullopt-free: throws 503 when shutting down.
Outcome run_blocking(ServerContext& ctx, Admission& admission, GenerationJob& job, Socket client_socket) {
    auto lease = admission.wait_for_slot();
    if (!lease) throw ApiError{503, "the server is shutting down", "unavailable_error", "", "shutting_down"};
    return generate(ctx.engine, lease->index(), job, [client_socket](const StepOutput&) { return !peer_hung_up(client_socket); });
}

Admission admit_or_throw(ServerContext& ctx) {
    auto admission = ctx.slots->admit();
    if (!admission) {
        ++ctx.metrics.requests_rejected;
        throw ApiError{503, fmt::format("every slot is busy and the queue is full ({} waiting); retry shortly", ctx.settings.queue),
                       "unavailable_error", "", "queue_full"};
    }
    return std::move(*admission);
}

// What a chat request's response_format and tool_choice hold the reply to
// (null: nothing; the generation is then the unconstrained one). Built
// before admission, grammars compiled or found compiled, so what the engine
// cannot enforce is a 400 at once, not after a queue. A demanded call
// leaves no answer to hold to response_format (its content is empty), so it
// takes precedence; response_format is still checked.
std::unique_ptr<ConstrainedReply> constraint_for(ServerContext& ctx, const json& request, const std::string& body,
                                                 const json& rendered, const std::string& channel,
                                                 const std::vector<int32_t>& stop_ids) {
    std::vector<int32_t> end_ids = stop_ids;
    end_ids.insert(end_ids.end(), ctx.engine.eos_ids.begin(), ctx.engine.eos_ids.end());
    const std::string format = rendered.value("format", "");
    const auto answer = read_response_format(request, body);
    SharedGrammar answer_grammar;
    try {
        if (answer) answer_grammar = ctx.engine.grammars->get(*answer);
    } catch (const GrammarRefused& refused) {
        throw bad_request(std::string("response_format cannot be enforced: ") + refused.what(), "response_format");
    }
    auto call = constrain_tool_call(request, body, *ctx.engine.grammars, ctx.engine.tokenizer, rendered, channel, end_ids);
    if (call || !answer_grammar) return call;
    return constrain_answer(std::move(answer_grammar), ctx.engine.tokenizer, format, channel, std::move(end_ids));
}

// What waste_chat_render_json holds at its peak for a request: its own
// parse of the body, and per byte of the body's text (all of it but image
// URLs, which are not tokenized) the prompt, its tokens and the answer that
// lists them as JSON. Why 64 bytes a byte: heaptrack saw 28 for 2 MB of
// English words in one message (0.37 tokens a byte: ~45 bytes a token past
// the 12 a byte of tokenizing), so ~57 at a token a byte.
constexpr uint64_t kRenderBytesPerTextByte = 64;

// parsed: parsed_json_bytes(body), which the request's own parse reserved.
uint64_t render_bytes(const json& request, const std::string& body, uint64_t parsed) {
    uint64_t image_urls = 0;
    const auto messages = request.find("messages");
    if (messages != request.end() && messages->is_array())
        for (const json& message : *messages) {
            const auto content = message.is_object() ? message.find("content") : message.end();
            if (!message.is_object() || content == message.end() || !content->is_array()) continue;
            for (const json& part : *content) {
                if (!part.is_object() || !part.contains("image_url")) continue;
                const json& image = part["image_url"];
                const json* url = image.is_string() ? &image : image.is_object() && image.contains("url") ? &image["url"] : nullptr;
                if (url && url->is_string()) image_urls += url->get_ref<const std::string&>().size();
            }
        }
    return parsed + kRenderBytesPerTextByte * (body.size() - std::min<uint64_t>(image_urls, body.size()));
}

// waste_chat_render_json for a request body; a refusal becomes its 400
// (OpenAI's error object, as the library wrote it), anything else a 500.
json render_chat(ServerContext& ctx, const std::string& body, const json& options) {
    char* rendered_text = nullptr;
    waste_error error{};
    const waste_status status =
        waste_chat_render_json(ctx.engine.model, body.data(), body.size(), dump(options).c_str(), &rendered_text, &error);
    std::string rendered_string = rendered_text ? rendered_text : "";
    waste_string_free(rendered_text);
    if (status == WASTE_OK) request_memory(ctx).grow(rendered_string.size() + parsed_json_bytes(rendered_string), "the rendered prompt");
    if (status != WASTE_OK) {
        ApiError refusal = bad_request(error.message);
        if (status == WASTE_ERR_INVALID_ARGUMENT && !rendered_string.empty()) {
            const json e = json::parse(rendered_string, nullptr, false);
            if (e.is_object()) {
                refusal.message = e.value("message", refusal.message);
                refusal.type = e.value("type", refusal.type);
                if (e.contains("param") && e["param"].is_string()) refusal.param = e["param"];
                if (e.contains("code") && e["code"].is_string()) refusal.code = e["code"];
            }
        } else if (status != WASTE_ERR_INVALID_ARGUMENT) {
            refusal = ApiError{500, std::string("cannot render the conversation: ") + error.message, "engine_error", "", "engine_error"};
        }
        throw refusal;
    }
    return json::parse(rendered_string);
}

void chat_completions(ServerContext& ctx, const std::string& body, httplib::Response& res) {
    uint64_t parsed = 0;
    const json request = parse_body(body, &request_memory(ctx), &parsed);
    const SamplingParams params = read_sampling_params(request, Endpoint::chat, waste_tokenizer_token_count(ctx.engine.tokenizer),
                                                       ctx.engine.sampling_defaults);
    json options = {{"thinking", ctx.engine.thinking}, {"list_images", ctx.engine.vision}};
    if (!ctx.engine.chat_template.empty()) options["chat_template"] = ctx.engine.chat_template;
    request_memory(ctx).grow(render_bytes(request, body, parsed), "rendering the conversation");
    json rendered = render_chat(ctx, body, options);
    auto job = std::make_shared<GenerationJob>();
    if (rendered.contains("images") && !rendered["images"].empty()) {
        if (!ctx.engine.vision)
            throw bad_request("this server was started without --vision: images cannot be read", "messages", "vision_disabled");
        // Read and measure every image, then render again with their sizes:
        // each image part becomes its media block (k3-chat.md §10).
        RequestImages images = read_request_images(ctx.engine, rendered["images"], ctx.settings.image_dir, request_memory(ctx));
        options.erase("list_images");
        options["image_sizes"] = images.sizes;
        rendered = render_chat(ctx, body, options);
        job->rendered_prompt = rendered.at("ids").get<std::vector<int32_t>>();
        job->prompt = expand_image_pads(ctx.engine, job->rendered_prompt, images.positions);
        job->images = std::move(images.bytes);
    } else {
        job->prompt = rendered.at("ids").get<std::vector<int32_t>>();
    }
    job->params = params;
    if (rendered.contains("stop_ids")) job->stop_ids = rendered["stop_ids"].get<std::vector<int32_t>>();
    const std::string channel = rendered.contains("channel") && rendered["channel"].is_string() ? rendered["channel"].get<std::string>() : "";
    job->reader = make_chat_reader(ctx.engine.model, channel);
    job->constraint = constraint_for(ctx, request, body, rendered, channel, job->stop_ids);
    completion_budget(ctx.engine, *job);  // a prompt over the context is refused before admission
    auto admission = std::make_shared<Admission>(admit_or_throw(ctx));
    const std::string id = new_id("chatcmpl-");
    const int64_t created = unix_now();

    const Socket client_socket = request_socket();
    if (!params.stream) {
        const Outcome outcome = run_blocking(ctx, *admission, *job, client_socket);
        if (outcome.client_gone) return;  // nobody to answer (counted as a disconnect)
        ++ctx.metrics.requests_ok;
        json choice = {{"index", 0}, {"message", outcome.message}, {"logprobs", nullptr}, {"finish_reason", outcome.finish_reason}};
        if (params.logprobs) choice["logprobs"] = chat_logprobs(ctx.engine, outcome.choices);
        const json body = {{"id", id},       {"object", "chat.completion"},           {"created", created},
                           {"model", ctx.engine.model_id}, {"choices", json::array({choice})},
                           {"usage", usage_json(outcome)}, {"waste", waste_json(ctx.engine, outcome)}};
        res.set_content(dump(body), "application/json");
        return;
    }

    // Streaming: the generation runs inside the content provider, writing a
    // chunk per token; a client that hung up (or a failed write) ends the
    // generation at that token.
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        "text/event-stream", [&ctx, job, admission, id, created, params, client_socket](size_t, httplib::DataSink& sink) {
            ChatStream stream(id, created, ctx.engine.model_id);
            bool client_there = sink.write(stream.first().data(), stream.first().size());
            auto lease = client_there ? admission->wait_for_slot() : std::nullopt;
            if (!lease) {
                if (client_there) {
                    const std::string error = sse_event(ApiError{503, "the server is shutting down", "unavailable_error", "", "shutting_down"}.to_json()) + kSseDone;
                    sink.write(error.data(), error.size());
                    sink.done();
                }
                return false;
            }
            bool gone = false;
            try {
                const Outcome outcome = generate(ctx.engine, lease->index(), *job, [&](const StepOutput& step) {
                    if (!sink.is_writable() || peer_hung_up(client_socket)) return gone = true, false;
                    const std::string text = stream.step(ctx.engine, step, params.logprobs);
                    if (!text.empty() && !sink.write(text.data(), text.size())) return gone = true, false;
                    if (step.choice) ++ctx.metrics.stream_tokens_sent;
                    return true;
                });
                if (outcome.client_gone) return false;
                const std::string tail = stream.end(ctx.engine, outcome, params.include_usage);
                if (!sink.write(tail.data(), tail.size())) return false;
                ++ctx.metrics.requests_ok;
            } catch (const ApiError& error) {
                // Headers are gone already: the error travels as an event.
                ++ctx.metrics.requests_error;
                const std::string text = sse_event(error.to_json()) + kSseDone;
                sink.write(text.data(), text.size());
            } catch (const std::exception& e) {
                ++ctx.metrics.requests_error;
                const std::string text =
                    sse_event(ApiError{500, std::string("the server failed: ") + e.what(), "engine_error", "", "engine_error"}.to_json()) + kSseDone;
                sink.write(text.data(), text.size());
            }
            // The slot is free before the body's last chunk goes out: a client
            // that has read its whole answer finds it free (/metrics says 0
            // active; its next request is not counted twice against --queue).
            lease.reset();
            sink.done();
            return true;
        });
}

void completions(ServerContext& ctx, const std::string& body, httplib::Response& res) {
    const json request = parse_body(body, &request_memory(ctx));
    const SamplingParams params = read_sampling_params(request, Endpoint::completion, waste_tokenizer_token_count(ctx.engine.tokenizer),
                                                       ctx.engine.sampling_defaults);
    const auto prompt_it = request.find("prompt");
    if (prompt_it == request.end()) throw bad_request("'prompt' is required", "prompt");
    json prompt = *prompt_it;
    if (prompt.is_array()) {
        if (prompt.size() != 1) throw bad_request("'prompt' as a list must hold exactly one string", "prompt");
        prompt = prompt[0];
    }
    if (!prompt.is_string()) throw bad_request("'prompt' must be a string (or a list of exactly one)", "prompt");
    GenerationJob job;
    job.prompt = plain_tokens(ctx, prompt.get<std::string>());
    if (job.prompt.empty()) throw bad_request("'prompt' is empty: there is nothing to continue", "prompt");
    job.params = params;
    job.reader = make_text_reader(ctx.engine.tokenizer);
    completion_budget(ctx.engine, job);
    Admission admission = admit_or_throw(ctx);
    const Outcome outcome = run_blocking(ctx, admission, job, request_socket());
    if (outcome.client_gone) return;  // nobody to answer (counted as a disconnect)
    ++ctx.metrics.requests_ok;
    json choice = {{"text", outcome.message["content"].is_string() ? outcome.message["content"].get<std::string>() : ""},
                   {"index", 0},
                   {"logprobs", nullptr},
                   {"finish_reason", outcome.finish_reason == "tool_calls" ? "stop" : outcome.finish_reason}};
    if (params.logprobs) choice["logprobs"] = completion_logprobs(ctx.engine, outcome.choices);
    res.set_content(dump(json{{"id", new_id("cmpl-")},
                              {"object", "text_completion"},
                              {"created", unix_now()},
                              {"model", ctx.engine.model_id},
                              {"choices", json::array({choice})},
                              {"usage", usage_json(outcome)},
                              {"waste", waste_json(ctx.engine, outcome)}}),
                    "application/json");
}

// llama.cpp server's shape: {"content": text, "with_pieces"?} -> {"tokens": [...]}.
// The answer is written as text, not built as JSON values, and its size is
// reserved before it is written: at most a token a byte of content, each
// answered as its id or {"id", "piece"} (a piece escaped at most 6 bytes a
// byte).
void tokenize(ServerContext& ctx, const std::string& body, httplib::Response& res) {
    const json request = parse_body(body, &request_memory(ctx));
    const auto content = request.find("content");
    if (content == request.end() || !content->is_string()) throw bad_request("'content' must be a string", "content");
    const bool pieces = request.contains("with_pieces") && request["with_pieces"].is_boolean() && request["with_pieces"].get<bool>();
    const std::vector<int32_t> ids = plain_tokens(ctx, content->get<std::string>());
    // Measured first, then written: nothing of the answer is held before
    // its size is reserved.
    uint64_t size = 16;
    for (const int32_t id : ids) size += 12 + (pieces ? 20 + dump(token_text(ctx.engine, id)).size() : 0);
    request_memory(ctx).grow(size, "the answer's token list");
    std::string out;
    out.reserve(size);
    out += "{\"tokens\":[";
    for (size_t i = 0; i < ids.size(); ++i) {
        if (i) out += ',';
        if (pieces) out += fmt::format("{{\"id\":{},\"piece\":{}}}", ids[i], dump(token_text(ctx.engine, ids[i])));
        else out += std::to_string(ids[i]);
    }
    out += "]}";
    res.set_content(std::move(out), "application/json");
}

// {"tokens": [ids]} -> {"content": text}. The text's size is bounded by its
// pieces' before it is made, and reserved: the text (a byte of a piece may
// come out as U+FFFD's three) and the answer (escaped, at most 6 bytes a
// byte).
void detokenize(ServerContext& ctx, const std::string& body, httplib::Response& res) {
    const json request = parse_body(body, &request_memory(ctx));
    const auto tokens = request.find("tokens");
    if (tokens == request.end() || !tokens->is_array()) throw bad_request("'tokens' must be a list of token ids", "tokens");
    std::vector<int32_t> ids;
    const uint32_t vocabulary = waste_tokenizer_token_count(ctx.engine.tokenizer);
    request_memory(ctx).grow(4 * tokens->size(), "the token ids");
    uint64_t length = 0;
    for (const json& t : *tokens) {
        if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= vocabulary)
            throw bad_request("'tokens' holds " + dump(t) + ": ids are integers from 0 to " + std::to_string(vocabulary - 1), "tokens");
        ids.push_back(t.get<int32_t>());
        length += token_text(ctx.engine, ids.back()).size();
    }
    request_memory(ctx).grow(24 * length + 64, "the detokenized text");
    char* text = nullptr;
    size_t text_length = 0;
    waste_error error{};
    if (waste_tokenizer_detokenize(ctx.engine.tokenizer, ids.data(), ids.size(), 0, &text, &text_length, &error) != WASTE_OK)
        throw bad_request(error.message, "tokens");
    const std::string content(text ? text : "", text_length);
    waste_string_free(text);
    res.set_content(dump(json{{"content", content}}), "application/json");
}

// The routes that take a body (their path without trailing slashes).
bool is_post_route(const std::string& path) {
    return path == "/v1/chat/completions" || path == "/v1/completions" || path == "/tokenize" || path == "/detokenize";
}

}  // namespace

void configure_http(HttpServer& server, ServerContext& ctx) {
    // Connections, their threads and timeouts: HttpServer (http_connections.h).
    // httplib reads no body over this (a declared length over it is refused
    // below, before reading).
    server.set_payload_max_length(ctx.settings.max_body);

    server.set_pre_routing_handler([&ctx, &server](const httplib::Request& req, httplib::Response& res) {
        mark_reading_body();
        const bool has_body = req.method == "POST" || req.method == "PUT" || req.method == "PATCH" ||
                              req.has_header("Transfer-Encoding") ||
                              (req.has_header("Content-Length") && req.get_header_value("Content-Length") != "0");
        std::string path = req.path;
        while (path.size() > 1 && path.back() == '/') path.pop_back();
        // Past the connection cap only /health is answered (a load
        // balancer's probe must not fail because clients are slow).
        if (const Connection* connection = current_connection(); connection && connection->overflow && path != "/health") {
            close_after_response(res);
            send_unavailable(res, fmt::format("the server has its {} connections open (--max-connections); retry shortly",
                                              server.limits().max_connections),
                             "too_many_connections");
            return httplib::Server::HandlerResponse::Handled;
        }
        // Authentication first: nothing about the request (its size
        // included) is answered to a client without the key. A refused
        // body is never read, so its connection closes.
        if (path != "/health" && !authorized(ctx.settings.api_key, req.get_header_value("Authorization"))) {
            if (has_body) close_after_response(res);
            send_error(res, ApiError{401, "a valid API key is required: send 'Authorization: Bearer KEY'", "authentication_error", "", "invalid_api_key"});
            return httplib::Server::HandlerResponse::Handled;
        }
        if (!has_body) return httplib::Server::HandlerResponse::Unhandled;
        // Only the POST routes read a body: any other is refused unread.
        if (req.method != "POST" || !is_post_route(path)) {
            close_after_response(res);
            send_error(res, ApiError{404, fmt::format("no route for {} {}", req.method.substr(0, 16), req.path.substr(0, 256)),
                                     "not_found_error", "", "not_found"});
            return httplib::Server::HandlerResponse::Handled;
        }
        if (!req.has_header("Content-Length")) {
            // Also a chunked body: its length is unknown before reading.
            close_after_response(res);
            send_error(res, ApiError{411, "a request body needs a Content-Length header", "invalid_request_error", "", "length_required"});
            return httplib::Server::HandlerResponse::Handled;
        }
        const std::string declared = req.get_header_value("Content-Length");
        char* end = nullptr;
        const unsigned long long length = std::strtoull(declared.c_str(), &end, 10);
        if (declared.empty() || *end != '\0' || length > ctx.settings.max_body) {
            close_after_response(res);
            send_error(res, ApiError{413, fmt::format("the body's Content-Length {} is over the limit of {} bytes (--max-body)",
                                                      declared.substr(0, 32), ctx.settings.max_body),
                                     "invalid_request_error", "", "payload_too_large"});
            return httplib::Server::HandlerResponse::Handled;
        }
        // The body's memory is reserved before it is read; while other
        // requests hold it, the body stays unread and the client retries.
        auto memory = ctx.request_memory->reserve(body_reservation(length));
        if (!memory) {
            close_after_response(res);
            send_unavailable(res, fmt::format("a body of {} bytes needs request memory that other requests hold ({} of {} bytes in use); "
                                              "retry shortly", length, ctx.request_memory->in_use(), ctx.request_memory->capacity()),
                             "server_busy");
            return httplib::Server::HandlerResponse::Handled;
        }
        if (Connection* connection = current_connection()) connection->memory.emplace(std::move(*memory));
        return httplib::Server::HandlerResponse::Unhandled;
    });

    // Every error without a body of ours gets OpenAI's shape (unknown
    // routes and methods, bodies httplib refused or could not read,
    // requests that missed their deadline or whose head is too large).
    server.set_error_handler([&server](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty()) return;
        Connection* connection = current_connection();
        if (connection && connection->timed_out) {
            res.status = 408;
            res.set_header("Connection", "close");
            send_error(res, ApiError{408, fmt::format("the request did not arrive within {} s (its line, headers and body)",
                                                      server.limits().request_timeout.count() / 1000.0),
                                     "invalid_request_error", "", "request_timeout"});
            return;
        }
        if (connection && connection->head_too_large) {
            res.status = 431;
            res.set_header("Connection", "close");
            send_error(res, ApiError{431, fmt::format("the request's line and headers are over {} bytes", kMaxHeadBytes),
                                     "invalid_request_error", "", "headers_too_large"});
            return;
        }
        // httplib's own 4xx other than 404 means the request could not be
        // read whole (a body cut short, a bad head): what is left of it on
        // the connection is not a request, so the connection closes.
        if (res.status != 404 && res.status != 405 && connection) close_after_response(res);
        std::string message = fmt::format("HTTP {} for {} {}", res.status, req.method, req.path);
        if (res.status == 404) message = fmt::format("no route for {} {}", req.method, req.path);
        send_error(res, ApiError{res.status, message, error_type_for(res.status), "", res.status == 404 ? "not_found" : ""});
    });

    // /health needs no key (a load balancer probes it), so without one it
    // says only whether the server is ready: the model and the build are
    // for clients that hold the key.
    server.Get(R"(/health/?)", [&ctx](const httplib::Request& req, httplib::Response& res) {
        mark_answering();
        const bool ready = ctx.ready.load();
        res.status = ready ? 200 : 503;
        json health = {{"status", ready ? "ok" : "loading"}};
        if (authorized(ctx.settings.api_key, req.get_header_value("Authorization"))) {
            health["model"] = ctx.engine.model_id;
            health["engine"] = ctx.engine_build;
            health["uptime_s"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - ctx.metrics.started).count();
        }
        res.set_content(dump(health), "application/json");
    });
    server.Get(R"(/metrics/?)", [&ctx, &server](const httplib::Request&, httplib::Response& res) {
        mark_answering();
        std::string text = ctx.metrics.prometheus_text();
        text += prometheus_metric("connections_open", "gauge", "Client connections open: served, or idle between requests", server.open_connections());
        text += prometheus_metric("request_memory_bytes", "gauge", "Request memory reserved by requests (--request-memory)",
                                  ctx.request_memory->in_use());
        text += prometheus_metric("request_memory_peak_bytes", "gauge", "The most request memory reserved at once",
                                  ctx.request_memory->peak());
        text += prometheus_metric("request_memory_limit_bytes", "gauge", "The request memory pool (--request-memory)",
                                  ctx.request_memory->capacity());
        res.set_content(text, "text/plain; version=0.0.4");
    });
    server.Get(R"(/v1/models/?)", endpoint(ctx, true, [&ctx](const httplib::Request&, httplib::Response& res) {
        res.set_content(dump(json{{"object", "list"}, {"data", json::array({model_object(ctx)})}}), "application/json");
    }));
    server.Get(R"(/v1/models/(.+?)/?)", endpoint(ctx, true, [&ctx](const httplib::Request& req, httplib::Response& res) {
        if (req.matches[1] != ctx.engine.model_id)
            throw ApiError{404, "no model '" + std::string(req.matches[1]) + "' here; this server serves '" + ctx.engine.model_id + "'",
                           "not_found_error", "model", "model_not_found"};
        res.set_content(dump(model_object(ctx)), "application/json");
    }));
    server.Post(R"(/v1/chat/completions/?)",
                post_endpoint(ctx, [&ctx](const std::string& body, httplib::Response& res) { chat_completions(ctx, body, res); }));
    server.Post(R"(/v1/completions/?)",
                post_endpoint(ctx, [&ctx](const std::string& body, httplib::Response& res) { completions(ctx, body, res); }));
    server.Post(R"(/tokenize/?)", post_endpoint(ctx, [&ctx](const std::string& body, httplib::Response& res) { tokenize(ctx, body, res); }));
    server.Post(R"(/detokenize/?)",
                post_endpoint(ctx, [&ctx](const std::string& body, httplib::Response& res) { detokenize(ctx, body, res); }));
}

}  // namespace waste_serve
