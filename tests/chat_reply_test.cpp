// chat_reply_test.cpp — the reply parser (k3-chat.md §12): every case of
// ../shared/fixtures/k3-chat/replies.json fed as its pieces, as token ids
// through the C API on tiny-tok.waste, and as many random re-splits of its
// text; then one case per rule the fixtures leave out. Exact comparisons:
// the parser's output is text and structure, with no arithmetic to round.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "chat/xtml_reply.h"
#include "test_support.h"
#include "waste/waste.h"

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;
using waste::chat::Marker;
using waste::chat::ReplyDelta;
using waste::chat::ReplyParser;

namespace {

struct Piece {
    std::string text;
    bool marker = false;
};

Marker marker_of(const std::string& text) {
    if (text == "<|open|>") return Marker::open;
    if (text == "<|close|>") return Marker::close;
    if (text == "<|sep|>") return Marker::sep;
    if (text == "<|end_of_msg|>") return Marker::end_of_msg;
    ADD_FAILURE() << "not a marker: " << text;
    return Marker::sep;
}

// What a client saw: the deltas concatenated, and the calls they named.
struct Fed {
    std::string reasoning, content;
    std::vector<size_t> calls;
    Json message;
};

Fed feed(const std::string& channel, const std::vector<Piece>& pieces) {
    ReplyParser parser(channel);
    Fed fed;
    auto take = [&](const ReplyDelta& delta) {
        fed.reasoning += delta.reasoning;
        fed.content += delta.content;
        for (size_t c : delta.calls) fed.calls.push_back(c);
    };
    for (const Piece& piece : pieces) take(piece.marker ? parser.push_marker(marker_of(piece.text)) : parser.push_text(piece.text));
    take(parser.finish());
    fed.message = parser.message_json();
    // Concatenated deltas equal the final values (§12.6).
    EXPECT_EQ(fed.reasoning, parser.reasoning());
    EXPECT_EQ(fed.content, parser.content());
    for (size_t c = 0; c < parser.tool_calls().size(); ++c)
        EXPECT_NE(std::find(fed.calls.begin(), fed.calls.end(), c), fed.calls.end()) << "call " << c << " was never announced";
    return fed;
}

std::vector<Piece> pieces_of(const Json& c) {
    std::vector<Piece> pieces;
    for (const auto& token : c.at("tokens")) pieces.push_back({token.at(0).get<std::string>(), token.at(1).get<bool>()});
    return pieces;
}

// Compares a message with a case's expect (and loose rules).
void check_message(const Json& message, const Json& c) {
    const Json& expect = c.at("expect");
    std::vector<std::string> ignore;
    std::string contains;
    if (c.contains("loose")) {
        if (c["loose"].contains("ignore")) ignore = c["loose"]["ignore"].get<std::vector<std::string>>();
        contains = c["loose"].value("content_contains", "");
    }
    auto ignored = [&](const std::string& field) { return std::find(ignore.begin(), ignore.end(), field) != ignore.end(); };
    const Json reasoning = message.contains("reasoning_content") ? message["reasoning_content"] : Json(nullptr);
    if (!ignored("reasoning_content")) EXPECT_EQ(reasoning, expect.at("reasoning_content"));
    if (!contains.empty()) {
        ASSERT_TRUE(message["content"].is_string());
        EXPECT_NE(message["content"].get<std::string>().find(contains), std::string::npos);
    } else if (!ignored("content")) {
        EXPECT_EQ(message["content"], expect.at("content"));
    }
    if (!ignored("finished")) EXPECT_EQ(message["finished"], expect.at("finished"));
    if (ignored("tool_calls")) return;
    const Json calls = message.contains("tool_calls") ? message["tool_calls"] : Json::array();
    ASSERT_EQ(calls.size(), expect.at("tool_calls").size()) << message.dump();
    for (size_t i = 0; i < calls.size(); ++i) {
        const Json& want = expect["tool_calls"][i];
        EXPECT_EQ(calls[i]["type"], "function");
        EXPECT_EQ(calls[i]["function"]["name"], want.at("name"));
        const std::string arguments = calls[i]["function"]["arguments"].get<std::string>();
        if (want.contains("arguments_raw")) EXPECT_EQ(arguments, want["arguments_raw"].get<std::string>());
        else EXPECT_EQ(nlohmann::json::parse(arguments), nlohmann::json::parse(want.at("arguments").dump())) << arguments;
    }
}

Json load_replies() {
    return Json::parse(waste_test::read_file(waste_test::shared_dir() / "fixtures" / "k3-chat" / "replies.json"));
}

std::string channel_of(const Json& c) { return c.at("channel").is_null() ? std::string() : c["channel"].get<std::string>(); }

// The same output with every run of text pieces between markers re-cut at random byte positions.
std::vector<Piece> resplit(const std::vector<Piece>& pieces, std::mt19937& random) {
    std::vector<Piece> out;
    std::string run;
    auto flush = [&] {
        size_t at = 0;
        while (at < run.size()) {
            const size_t length = 1 + random() % std::max<size_t>(1, std::min<size_t>(run.size() - at, 7));
            out.push_back({run.substr(at, length), false});
            at += length;
        }
        run.clear();
    };
    for (const Piece& piece : pieces) {
        if (piece.marker) {
            flush();
            out.push_back(piece);
        } else {
            run += piece.text;
        }
    }
    flush();
    return out;
}

struct TinyTok {
    waste_model* model = nullptr;
    waste_tokenizer* tokenizer = nullptr;
    TinyTok() {
        waste_open_options options;
        waste_open_options_init(&options);
        options.flags = WASTE_OPEN_METADATA_ONLY;
        waste_error error{};
        EXPECT_EQ(waste_model_open(waste_test::fixture("tiny-tok.waste").c_str(), &options, &model, &error), WASTE_OK) << error.message;
        if (model) {
            EXPECT_EQ(waste_model_tokenizer(model, nullptr, &tokenizer, &error), WASTE_OK);
        }
    }
    ~TinyTok() {
        waste_tokenizer_free(tokenizer);
        waste_model_close(model);
    }
};

// Feeds ids through the C API; checks that the deltas reassemble the message.
Json feed_ids(const TinyTok& tiny, const char* channel, const std::vector<int32_t>& ids) {
    waste_reply_parser* parser = nullptr;
    waste_error error{};
    EXPECT_EQ(waste_reply_parser_create(tiny.model, channel, &parser, &error), WASTE_OK) << error.message;
    if (!parser) return {};
    std::string reasoning, content;
    auto take = [&](const char* delta) {
        const Json d = Json::parse(delta);
        if (d.contains("reasoning_content")) reasoning += d["reasoning_content"].get<std::string>();
        if (d.contains("content")) content += d["content"].get<std::string>();
    };
    const char* delta = nullptr;
    for (const int32_t id : ids) {
        EXPECT_EQ(waste_reply_parser_push(parser, id, &delta, &error), WASTE_OK) << error.message;
        take(delta);
    }
    EXPECT_EQ(waste_reply_parser_finish(parser, &delta, &error), WASTE_OK);
    take(delta);
    char* out = nullptr;
    EXPECT_EQ(waste_reply_parser_message_json(parser, &out, &error), WASTE_OK);
    Json message = Json::parse(out);
    waste_string_free(out);
    waste_reply_parser_free(parser);
    EXPECT_EQ(message["content"], content.empty() ? Json(nullptr) : Json(content));
    EXPECT_EQ(message.value("reasoning_content", Json(nullptr)), reasoning.empty() ? Json(nullptr) : Json(reasoning));
    return message;
}

std::vector<int32_t> ids_of(const TinyTok& tiny, const std::vector<Piece>& pieces) {
    std::vector<int32_t> ids;
    for (const Piece& piece : pieces) {
        if (piece.marker) {
            ids.push_back(waste_tokenizer_special_id(tiny.tokenizer, piece.text.c_str()));
            continue;
        }
        int32_t* out = nullptr;
        size_t count = 0;
        waste_error error{};
        EXPECT_EQ(waste_tokenizer_tokenize(tiny.tokenizer, piece.text.data(), piece.text.size(), 0, &out, &count, &error), WASTE_OK);
        ids.insert(ids.end(), out, out + count);
        waste_tokens_free(out);
    }
    return ids;
}

}  // namespace

TEST(ChatReplyFixtures, EveryCaseByPiecesIdsAndResplits) {
    const Json cases = load_replies();
    ASSERT_GE(cases.at("cases").size(), 7u);
    TinyTok tiny;
    ASSERT_NE(tiny.model, nullptr);
    std::mt19937 random(20261202);
    for (const Json& c : cases.at("cases")) {
        SCOPED_TRACE(c.at("name").get<std::string>());
        const auto pieces = pieces_of(c);
        const Fed fed = feed(channel_of(c), pieces);
        check_message(fed.message, c);
        // 200 random re-splits of the text: the same message whatever the chunking
        for (int round = 0; round < 200; ++round) {
            const Fed again = feed(channel_of(c), resplit(pieces, random));
            EXPECT_EQ(again.message, fed.message);
        }
        // by id: markers as their special ids, text encoded plainly (a spelled marker stays text)
        const std::string channel = channel_of(c);
        const Json by_ids = feed_ids(tiny, channel.empty() ? nullptr : channel.c_str(), ids_of(tiny, pieces));
        check_message(by_ids, c);
    }
}

TEST(ChatReply, HeaderParsingAndUnescaping) {
    auto header = waste::chat::parse_header(R"(call tool="a&amp;quot;b" index=2 id="x y"   bare k="unterminated rest)");
    EXPECT_EQ(header.name, "call");
    ASSERT_EQ(header.attributes.size(), 5u);
    EXPECT_EQ(*header.find("tool"), "a&quot;b");  // &quot; first, then &amp;: stops at &quot;
    EXPECT_EQ(*header.find("index"), "2");
    EXPECT_EQ(*header.find("id"), "x y");
    EXPECT_EQ(*header.find("bare"), "");
    EXPECT_EQ(*header.find("k"), "unterminated rest");
    EXPECT_EQ(waste::chat::parse_header("").name, "");
}

TEST(ChatReply, TypedValues) {
    using waste::chat::typed_argument_value;
    EXPECT_EQ(typed_argument_value("string", " 42 "), Json(" 42 "));
    EXPECT_EQ(typed_argument_value("null", "anything"), Json(nullptr));
    EXPECT_EQ(typed_argument_value("boolean", " TRUE\n"), Json(true));
    EXPECT_EQ(typed_argument_value("boolean", "False"), Json(false));
    EXPECT_EQ(typed_argument_value("boolean", "yes"), Json("yes"));
    EXPECT_EQ(typed_argument_value("number", " 1.5 "), Json(1.5));
    EXPECT_EQ(typed_argument_value("number", "1,5"), Json("1,5"));
    EXPECT_EQ(typed_argument_value("object", "{\"a\": [1]}"), Json::parse("{\"a\": [1]}"));
    EXPECT_EQ(typed_argument_value("array", "[1, 2"), Json("[1, 2"));
    EXPECT_EQ(typed_argument_value("", "7"), Json(7));
    EXPECT_EQ(typed_argument_value("mystery", "Paris"), Json("Paris"));
    EXPECT_EQ(typed_argument_value("number", std::string(10000, '[')), Json(std::string(10000, '[')));  // too deep: raw text
}

TEST(ChatReply, EndOfOutputRules) {
    // a pending header at the end was not markup: its text survives as content
    Fed fed = feed("response", {{"A", false}, {"<|open|>", true}, {"resp", false}});
    EXPECT_EQ(fed.message["content"], "Aresp");
    // an open json block is filed at the end
    fed = feed("response", {{"<|open|>", true}, {"call tool=\"g\"", false}, {"<|sep|>", true}, {"<|open|>", true}, {"json", false},
                            {"<|sep|>", true}, {"{\"a\":", false}});
    ASSERT_EQ(fed.message["tool_calls"].size(), 1u);
    EXPECT_EQ(fed.message["tool_calls"][0]["function"]["arguments"], "{\"a\":");
    EXPECT_EQ(fed.message["tool_calls"][0]["id"], "call_1");  // no index: count + 1
    EXPECT_TRUE(fed.message["content"].is_null());            // only tool calls: content null
    // a stray <|sep|>, a close never opened, an argument outside a call: text or dropped, never an error
    fed = feed("response", {{"x", false}, {"<|sep|>", true}, {"<|close|>", true}, {"nothing", false}, {"<|sep|>", true}, {"y", false},
                            {"<|open|>", true}, {"argument key=\"k\"", false}, {"<|sep|>", true}, {"v", false},
                            {"<|close|>", true}, {"argument", false}, {"<|sep|>", true}, {"z", false}});
    EXPECT_EQ(fed.message["content"], "xyz");
    EXPECT_FALSE(fed.message.contains("tool_calls"));
    // an empty close name pops one element: back from think to the prompt's response? no — to nothing: content
    fed = feed("think", {{"r", false}, {"<|close|>", true}, {"<|sep|>", true}, {"c", false}});
    EXPECT_EQ(fed.message["reasoning_content"], "r");
    EXPECT_EQ(fed.message["content"], "c");
    // raw prompt: everything is content
    fed = feed("", {{"plain", false}});
    EXPECT_EQ(fed.message["content"], "plain");
    // whitespace between tool elements is dropped; ids come from attributes
    fed = feed("response", {{"<|open|>", true}, {"tools", false}, {"<|sep|>", true}, {"\n", false}, {"<|open|>", true},
                            {"call tool=\"f\" index=\"7\" id=\"abc\"", false}, {"<|sep|>", true}, {" \n", false},
                            {"<|close|>", true}, {"call", false}, {"<|sep|>", true}, {"<|close|>", true}, {"tools", false}, {"<|sep|>", true}});
    EXPECT_TRUE(fed.message["content"].is_null());
    EXPECT_EQ(fed.message["tool_calls"][0]["id"], "abc");
    EXPECT_EQ(fed.message["tool_calls"][0]["function"]["arguments"], "{}");
}

TEST(ChatReply, OtherSpecialsAreTextAndUtf8IsHeld) {
    TinyTok tiny;
    ASSERT_NE(tiny.model, nullptr);
    // <|media_pad|> (313) is a special but not a marker: its text is content; <|end_of_msg|> (307) ends the parse
    std::vector<int32_t> ids = {313};
    int32_t* out = nullptr;
    size_t count = 0;
    waste_error error{};
    const std::string text = "é€";  // multi-byte characters, cut by byte-level tokens
    ASSERT_EQ(waste_tokenizer_tokenize(tiny.tokenizer, text.data(), text.size(), 0, &out, &count, &error), WASTE_OK);
    ids.insert(ids.end(), out, out + count);
    waste_tokens_free(out);
    ids.push_back(307);
    ids.push_back(313);
    const Json message = feed_ids(tiny, "response", ids);
    EXPECT_EQ(message["content"], "<|media_pad|>" + text);
    EXPECT_EQ(message["finished"], true);
    // a bad channel and a bad token are clean errors
    waste_reply_parser* parser = nullptr;
    EXPECT_EQ(waste_reply_parser_create(tiny.model, "tools", &parser, &error), WASTE_ERR_INVALID_ARGUMENT);
    ASSERT_EQ(waste_reply_parser_create(tiny.model, "think", &parser, &error), WASTE_OK);
    const char* delta = nullptr;
    EXPECT_EQ(waste_reply_parser_push(parser, 1 << 30, &delta, &error), WASTE_ERR_INVALID_ARGUMENT);
    waste_reply_parser_free(parser);
}

TEST(ChatReply, HostileStreamsStayBounded) {
    ReplyParser parser("think");
    for (int i = 0; i < 20000; ++i) {
        parser.push_marker(Marker::open);
        parser.push_text("call");
        parser.push_marker(Marker::sep);
    }
    EXPECT_LE(parser.tool_calls().size(), waste::chat::max_reply_calls);
    // an endless header is given up as text, not held forever
    ReplyParser header("response");
    header.push_marker(Marker::open);
    std::string seen;
    for (int i = 0; i < 10000; ++i) seen += header.push_text("0123456789").content;
    EXPECT_GT(seen.size(), 0u);
    seen += header.finish().content;
    EXPECT_EQ(seen.size(), 100000u);
    // invalid UTF-8 in content still gives a JSON message (replaced)
    ReplyParser bad("response");
    bad.push_text("\xff\xfe ok");
    EXPECT_NO_THROW((void)bad.message_json().dump(-1, ' ', false, Json::error_handler_t::replace));
}
