// grammar_test.cpp — constrained decoding (src/grammar, docs/GRAMMAR.md):
// GBNF parsing and its errors, the byte matcher against an independent
// recogniser (tests/grammar_recogniser.py, an Earley parser over code points
// with its own GBNF reader), the token mask at token boundaries, and
// generation through the C API with and without a grammar.
//
// Tolerances: none. A grammar's language is exact, so every completed output
// must be accepted by the oracle and the matcher and the oracle must agree on
// every probe string; masks are compared as exact sets; generation without a
// grammar must give the same tokens bit for bit.
#include <algorithm>
#include <chrono>
#include <ctime>
#include <map>
#include <memory>
#include <cmath>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "api/tokenizer_handle.h"
#include "grammar/byte_matcher.h"
#include "grammar/gbnf_parser.h"
#include "grammar/json_schema.h"
#include "grammar/token_mask.h"
#include "platform/error.h"
#include "test_support.h"
#include "waste/waste.h"

namespace {

using waste::grammar::ByteMatcher;
using waste::grammar::parse_gbnf;

// Grammars the issue names: arithmetic, JSON, lists, C-like identifiers, and
// examples in the style of llama.cpp's grammars/ (written from its docs).
struct NamedGrammar {
    const char* name;
    const char* text;
};
const NamedGrammar grammars[] = {
    {"arithmetic", R"g(# integer arithmetic with precedence
root ::= expr
expr ::= term (("+" | "-") term)*
term ::= factor (("*" | "/") factor)*
factor ::= "-"? ( [0-9]+ | "(" expr ")" )
)g"},
    {"json", R"g(root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws

object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws

array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]" ws

string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4}) # escapes
  )* "\"" ws

number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws

# Optional space: by convention, applied in this grammar after literal chars when allowed
ws ::= | " " | "\n" [ \t]{0,20}
)g"},
    {"list", R"g(root ::= item+
# Excludes various line break characters
item ::= "- " [^\r\n\x0b\x0c\x85\u2028\u2029]+ "\n"
)g"},
    {"identifier", R"g(root ::= decl (";" " "? decl)* ";"?
decl ::= type " " ident ( " = " ident )?
type ::= "int" | "char" | "long" | "unsigned" " " type
ident ::= [a-zA-Z_] [a-zA-Z0-9_]{0,31}
)g"},
    {"chess", R"g(root   ::= (
    # it must start with the characters "1. " followed by a sequence
    # of characters that match the `move` rule, followed by a space, followed
    # by another move, and then a newline
    "1. " move " " move "\n"

    # it's followed by one or more subsequent moves, numbered with one or two digits
    ([1-9] [0-9]? ". " move " " move "\n")+
)
move   ::= (pawn | nonpawn | castle) [+#]?
pawn   ::= ([a-h] "x")? [a-h] [1-8] ("=" [NBRQ])?
nonpawn ::= [NBKQR] [a-h]? [1-8]? "x"? [a-h] [1-8]
castle ::= "O-O" "-O"?
)g"},
    {"japanese", R"g(# A probably incorrect grammar for Japanese
root        ::= jp-char+ ([ \t\n] jp-char+)*
jp-char     ::= hiragana | katakana | punctuation | cjk
hiragana    ::= [ぁ-ゟ]
katakana    ::= [ァ-ヿ]
punctuation ::= [、-〾]
cjk         ::= [一-鿿]
)g"},
    {"counts", R"g(root ::= "phone: " [0-9]{3} "-" [0-9]{3,4} ( " ext " [0-9]{,3} )? "." {1,2} "ok"*
)g"},
    {"any-text", R"g(root ::= ( [^a] | "a" "b"? )* "!"
)g"},
};

// The kimi-mini tokenizer (4,032 byte-level ranks), read from the repository.
waste_tokenizer* kimi_tokenizer() {
    static waste_tokenizer* tokenizer = [] {
        waste_tokenizer* t = nullptr;
        waste_error error{};
        const auto path = waste_test::source_dir() / "models" / "kimi-mini" / "tiktoken.model";
        EXPECT_EQ(waste_tokenizer_open(path.c_str(), "kimi", nullptr, &t, &error), WASTE_OK) << error.message;
        return t;
    }();
    return tokenizer;
}

std::string token_text(const waste_tokenizer* tokenizer, int32_t id) {
    char* text = nullptr;
    size_t length = 0;
    waste_error error{};
    EXPECT_EQ(waste_tokenizer_detokenize(tokenizer, &id, 1, 0, &text, &length, &error), WASTE_OK) << error.message;
    std::string out(text, length);
    waste_string_free(text);
    return out;
}

// kimi-mini's ranks' bytes (every id below its first special).
std::vector<std::string> kimi_pieces() {
    std::vector<std::string> out;
    const uint32_t count = waste_tokenizer_token_count(kimi_tokenizer());
    for (uint32_t id = 0; id < count; ++id) {
        std::string text = token_text(kimi_tokenizer(), static_cast<int32_t>(id));
        if (text.empty() || text.find("<|") != std::string::npos) break;
        out.push_back(std::move(text));
    }
    return out;
}

struct GrammarDeleter {
    void operator()(waste_grammar* g) const { waste_grammar_free(g); }
};
struct StateDeleter {
    void operator()(waste_grammar_state* s) const { waste_grammar_state_free(s); }
};
using GrammarPtr = std::unique_ptr<waste_grammar, GrammarDeleter>;
using StatePtr = std::unique_ptr<waste_grammar_state, StateDeleter>;

GrammarPtr compile(const waste_tokenizer* tokenizer, uint32_t kind, const std::string& text) {
    waste_grammar* g = nullptr;
    waste_error error{};
    EXPECT_EQ(waste_grammar_compile(tokenizer, kind, text.data(), text.size(), &g, &error), WASTE_OK) << error.message;
    return GrammarPtr(g);
}

// Random logits over the vocabulary plus one end token (id = vocab): the
// grammar state picks among the allowed tokens, as a sampler over an
// untrained model would. Returns the bytes and whether the output ended.
struct Walk {
    std::string bytes;
    bool completed = false;
};
Walk random_walk(const waste_tokenizer* tokenizer, const waste_grammar* grammar, std::mt19937_64& random, size_t max_tokens) {
    const uint32_t vocab = waste_tokenizer_token_count(tokenizer);
    const int32_t end = static_cast<int32_t>(vocab);
    waste_grammar_state* raw = nullptr;
    waste_error error{};
    EXPECT_EQ(waste_grammar_state_create(grammar, &end, 1, &raw, &error), WASTE_OK) << error.message;
    StatePtr state(raw);
    std::vector<float> logits(vocab + 1);
    std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
    Walk walk;
    for (size_t step = 0; step < max_tokens; ++step) {
        for (auto& l : logits) l = uniform(random);
        logits[static_cast<size_t>(end)] = 0.7f + uniform(random);  // ends often once allowed
        size_t allowed = 0;
        EXPECT_EQ(waste_grammar_state_mask(state.get(), logits.data(), logits.size(), &allowed, &error), WASTE_OK) << error.message;
        EXPECT_GT(allowed, 0u) << "a live grammar state must allow some token";
        if (allowed == 0) break;
        const auto best = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
        EXPECT_EQ(waste_grammar_state_accept(state.get(), best, &error), WASTE_OK) << error.message;
        if (best == end) {
            walk.completed = true;
            break;
        }
        walk.bytes += token_text(tokenizer, best);
    }
    return walk;
}

std::string hex(const std::string& bytes) {
    std::string out;
    for (unsigned char c : bytes) out += fmt::format("{:02x}", c);
    return out;
}

// The oracle's verdicts, one per input.
std::vector<int> oracle(const std::string& gbnf, const std::vector<std::string>& inputs) {
    waste_test::TempDir dir;
    waste_test::write_file(dir / "g.gbnf", gbnf);
    std::string lines;
    for (const auto& in : inputs) lines += hex(in) + "\n";
    waste_test::write_file(dir / "in.txt", lines);
    std::string output;
    const auto script = waste_test::source_dir() / "tests" / "grammar_recogniser.py";
    const int rc = waste_test::run_command(
        fmt::format("python3 '{}' '{}' < '{}'", script.string(), (dir / "g.gbnf").string(), (dir / "in.txt").string()), &output);
    EXPECT_EQ(rc, 0) << output;
    std::vector<int> verdicts;
    for (char c : output)
        if (c == '0' || c == '1') verdicts.push_back(c - '0');
    return verdicts;
}

bool matcher_accepts(const waste::grammar::Grammar& g, const std::string& bytes) {
    ByteMatcher m(g);
    const int32_t s = m.walk(m.initial(), bytes);
    return s != ByteMatcher::dead && m.can_end(s);
}

std::string error_of(const std::string& gbnf) {
    try {
        parse_gbnf(gbnf);
    } catch (const waste::Error& e) {
        EXPECT_EQ(e.status(), WASTE_ERR_INVALID_ARGUMENT);
        return e.what();
    }
    return "";
}

}  // namespace

// Every completed output of a random walk under the mask is a sentence (the
// oracle accepts it); and on those outputs, their truncations and mutations,
// the byte matcher and the oracle agree string by string.
TEST(Grammar, OutputsAreAcceptedByAnIndependentRecogniser) {
    waste_tokenizer* tokenizer = kimi_tokenizer();
    ASSERT_NE(tokenizer, nullptr);
    size_t completed_total = 0;
    for (const auto& [name, text] : grammars) {
        SCOPED_TRACE(name);
        auto grammar = compile(tokenizer, WASTE_GRAMMAR_GBNF, text);
        ASSERT_TRUE(grammar);
        const auto parsed = parse_gbnf(text);
        std::mt19937_64 random(std::hash<std::string>{}(name));
        std::vector<std::string> completed, probes;
        // short walks: the oracle is an Earley parser in Python, cubic in the length
        for (int i = 0; i < 12; ++i) {
            Walk w = random_walk(tokenizer, grammar.get(), random, 24);
            if (w.completed) completed.push_back(w.bytes);
            probes.push_back(w.bytes);
            // near misses: truncations, a byte dropped, a byte changed, a byte inserted
            if (!w.bytes.empty()) {
                const size_t at = random() % w.bytes.size();
                probes.push_back(w.bytes.substr(0, at));
                probes.push_back(w.bytes.substr(0, at) + w.bytes.substr(at + 1));
                std::string changed = w.bytes;
                changed[at] = static_cast<char>("a0-\"{ (\n\xC3\x81"[random() % 11]);
                probes.push_back(changed);
                probes.push_back(w.bytes.substr(0, at) + static_cast<char>(random() % 128) + w.bytes.substr(at));
            }
        }
        completed_total += completed.size();  // "list" and "any-text" rarely end in 24 random tokens
        std::vector<std::string> all = completed;
        all.insert(all.end(), probes.begin(), probes.end());
        const auto verdicts = oracle(text, all);
        ASSERT_EQ(verdicts.size(), all.size());
        size_t accepted = 0;
        for (size_t i = 0; i < all.size(); ++i) {
            if (i < completed.size()) {
                EXPECT_EQ(verdicts[i], 1) << "completed output rejected by the oracle: " << all[i];
            }
            EXPECT_EQ(matcher_accepts(parsed, all[i]), verdicts[i] == 1) << "matcher and oracle disagree on: " << all[i];
            accepted += static_cast<size_t>(verdicts[i]);
        }
        EXPECT_LT(accepted, all.size()) << "no probe was rejected: the probes test nothing";
    }
    EXPECT_GE(completed_total, 24u) << "too few walks ended to test anything";
}

// A rank file of hand-picked tokens: every byte, plus tokens that cross
// literal and class boundaries, split UTF-8 characters, and prefixes of
// keywords.
class TokenBoundary : public ::testing::Test {
protected:
    void SetUp() override {
        std::vector<std::string> extra = {"tr", "true", "true,", "ue", "nul", "null", "null]", "{\"", "\":", "\xC3\xA9",
                                          "\xC3\xA9\xC3", "\xA9x", "\xE3\x81", "\x82\xE3", "a1", "1a", "12", "ab\"", "\"}"};
        std::string ranks;
        auto b64 = [](const std::string& s) {
            static const char* table = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
            std::string out;
            size_t i = 0;
            for (; i + 2 < s.size(); i += 3) {
                const uint32_t v = (uint8_t(s[i]) << 16) | (uint8_t(s[i + 1]) << 8) | uint8_t(s[i + 2]);
                for (int k = 18; k >= 0; k -= 6) out += table[(v >> k) & 63];
            }
            if (s.size() - i == 1) {
                const uint32_t v = uint8_t(s[i]) << 16;
                out += table[(v >> 18) & 63];
                out += table[(v >> 12) & 63];
                out += "==";
            } else if (s.size() - i == 2) {
                const uint32_t v = (uint8_t(s[i]) << 16) | (uint8_t(s[i + 1]) << 8);
                out += table[(v >> 18) & 63];
                out += table[(v >> 12) & 63];
                out += table[(v >> 6) & 63];
                out += '=';
            }
            return out;
        };
        int rank = 0;
        for (int b = 0; b < 256; ++b) ranks += b64(std::string(1, static_cast<char>(b))) + " " + std::to_string(rank++) + "\n";
        for (const auto& e : extra) {
            ids_[e] = rank;
            ranks += b64(e) + " " + std::to_string(rank++) + "\n";
        }
        waste_test::write_file(dir_ / "ranks.tiktoken", ranks);
        waste_error error{};
        ASSERT_EQ(waste_tokenizer_open((dir_ / "ranks.tiktoken").c_str(), "gpt2", R"([{"id": 400, "text": "<|end|>"}])",
                                       &tokenizer_, &error),
                  WASTE_OK)
            << error.message;
    }
    void TearDown() override { waste_tokenizer_free(tokenizer_); }

    // The ids allowed next after accepting `prefix_tokens`.
    std::set<int32_t> allowed(const std::string& gbnf, const std::vector<int32_t>& prefix_tokens, int32_t end = 400) {
        auto grammar = compile(tokenizer_, WASTE_GRAMMAR_GBNF, gbnf);
        waste_grammar_state* raw = nullptr;
        waste_error error{};
        EXPECT_EQ(waste_grammar_state_create(grammar.get(), &end, 1, &raw, &error), WASTE_OK);
        StatePtr state(raw);
        for (int32_t t : prefix_tokens) EXPECT_EQ(waste_grammar_state_accept(state.get(), t, &error), WASTE_OK) << error.message << " token " << t;
        std::vector<float> logits(waste_tokenizer_token_count(tokenizer_), 0.0f);
        EXPECT_EQ(waste_grammar_state_mask(state.get(), logits.data(), logits.size(), nullptr, &error), WASTE_OK);
        std::set<int32_t> out;
        for (size_t i = 0; i < logits.size(); ++i)
            if (!std::isinf(logits[i])) out.insert(static_cast<int32_t>(i));
        return out;
    }
    int32_t id(const std::string& token) const {
        if (token.size() == 1) return static_cast<uint8_t>(token[0]);
        return ids_.at(token);
    }

    waste_test::TempDir dir_;
    waste_tokenizer* tokenizer_ = nullptr;
    std::map<std::string, int32_t> ids_;
};

TEST_F(TokenBoundary, KeywordPrefixesAndTokensCrossingElements) {
    const std::string g = "root ::= (\"true\" | \"null\") \",\"? \"]\"?\n";
    EXPECT_EQ(allowed(g, {}), (std::set<int32_t>{id("t"), id("n"), id("tr"), id("true"), id("true,"), id("nul"), id("null"), id("null]")}));
    // after "nul": "l" and the token "l" only; "null" is not a suffix
    EXPECT_EQ(allowed(g, {id("nul")}), (std::set<int32_t>{id("l")}));
    // after "true": may end (the end token), or go on with "," or "]"
    EXPECT_EQ(allowed(g, {id("true")}), (std::set<int32_t>{id(","), id("]"), 400}));
    // after "true,": "]" or end
    EXPECT_EQ(allowed(g, {id("true,")}), (std::set<int32_t>{id("]"), 400}));
}

TEST_F(TokenBoundary, Utf8SplitAcrossTokens) {
    const std::string g = "root ::= [é]+ \"x\"\n";
    // é is C3 A9: the lead byte alone, é, and é plus the next lead byte; never A9 first
    EXPECT_EQ(allowed(g, {}), (std::set<int32_t>{0xC3, id("\xC3\xA9"), id("\xC3\xA9\xC3")}));
    // in the middle of a character only its continuation, alone or running on into "x"
    EXPECT_EQ(allowed(g, {id("\xC3\xA9\xC3")}), (std::set<int32_t>{0xA9, id("\xA9x")}));
    EXPECT_EQ(allowed(g, {0xC3}), (std::set<int32_t>{0xA9, id("\xA9x")}));
    EXPECT_EQ(allowed(g, {id("\xC3\xA9")}), (std::set<int32_t>{0xC3, id("\xC3\xA9"), id("\xC3\xA9\xC3"), id("x")}));
    // a class of 3-byte characters: the token E3 81 and then 82 (U+3042 あ)
    const std::string kana = "root ::= [ぁ-ゟ]{2}\n";
    const auto first = allowed(kana, {});
    EXPECT_TRUE(first.count(id("\xE3\x81")) && first.count(0xE3));
    EXPECT_FALSE(first.count(0x81));
    const auto second = allowed(kana, {id("\xE3\x81")});
    EXPECT_TRUE(second.count(0x82) && second.count(id("\x82\xE3")));
}

TEST_F(TokenBoundary, ClassBoundariesAndEndOnlyWhereComplete) {
    const std::string g = "root ::= [a-z]+ [0-9]\n";
    const auto start = allowed(g, {});
    EXPECT_TRUE(start.count(id("a1")) && start.count(id("a")) && !start.count(id("1a")) && !start.count(id("12")) && !start.count(400));
    const auto after_a1 = allowed(g, {id("a1")});
    EXPECT_EQ(after_a1, (std::set<int32_t>{400}));  // complete: only the end token
    // specials other than the end tokens are never allowed, even where the grammar may end
    EXPECT_FALSE(allowed(g, {id("a1")}, -1).count(400));
}

TEST(Grammar, BadGrammarsGiveErrorsWithPositions) {
    EXPECT_NE(error_of("root ::= foo\n").find("line 1:10: rule 'foo' is used but never defined"), std::string::npos) << error_of("root ::= foo\n");
    EXPECT_NE(error_of("root ::= \"a\"\nx ::= x \"b\" | \"c\"\n").find("left-recursive"), std::string::npos);
    EXPECT_NE(error_of("root ::= a\na ::= b? a \"x\" | \"y\"\nb ::= \"z\"\n").find("left-recursive"), std::string::npos);
    EXPECT_NE(error_of("root ::= \"a\" root\n").find("language is empty"), std::string::npos);
    EXPECT_NE(error_of("root ::= [^\\x00-\\U0010FFFF]\n").find("language is empty"), std::string::npos);
    EXPECT_NE(error_of("root ::= \"abc\n").find("line 1:10: unterminated literal"), std::string::npos) << error_of("root ::= \"abc\n");
    EXPECT_NE(error_of("root ::= (\"a\"\n").find("line 2:1: expected ')'"), std::string::npos) << error_of("root ::= (\"a\"\n");
    EXPECT_NE(error_of("root ::= \"\\q\"\n").find("line 1:11: unknown escape"), std::string::npos) << error_of("root ::= \"\\q\"\n");
    EXPECT_NE(error_of("root ::= [z-a]\n").find("backwards"), std::string::npos);
    EXPECT_NE(error_of("root ::= \"a\"{3,2}\n").find("min above max"), std::string::npos);
    EXPECT_NE(error_of("a ::= \"x\"\n").find("no rule 'root'"), std::string::npos);
    EXPECT_NE(error_of("root ::= \"a\"\nroot ::= \"b\"\n").find("line 2:1: rule 'root' is defined twice"), std::string::npos);
    EXPECT_NE(error_of("root ::= \"a\" b ::= \"c\"\n").find("a newline is missing"), std::string::npos);
    // blow-up: repetition past the element bound
    const auto start = std::chrono::steady_clock::now();
    // (nested counts do not multiply here: a repeated group is one rule reference)
    std::string wide = "root ::= r0\n";
    for (int i = 0; i < 120; ++i) wide += fmt::format("r{} ::= \"a\"{{10000}}\n", i);
    EXPECT_NE(error_of(wide).find("grows past"), std::string::npos);
    EXPECT_NE(error_of("root ::= " + std::string(200, '(') + "\"a\"" + std::string(200, ')') + "\n").find("nested deeper"), std::string::npos);
    EXPECT_NE(error_of(std::string((1u << 20) + 1, ' ')).find("bytes of text"), std::string::npos);
    // each is refused within a second (bounded work; the test's tolerance for a loaded machine)
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0);
}

// Generation through waste_session_generate: without a grammar the tokens
// are those of a loop over the public sampler (bit-identical: the grammar
// changes nothing when absent); with one, every output follows it.
TEST(Grammar, SessionGenerateWithAndWithoutAGrammar) {
    waste_test::TempDir dir;
    waste_error error{};
    ASSERT_EQ(waste_synth((dir / "tiny").c_str(), "tiny", 3, nullptr, nullptr, nullptr, &error), WASTE_OK) << error.message;
    waste_open_options options;
    waste_open_options_init(&options);
    options.context_length = 256;
    options.threads = 1;
    options.grammars = 4;
    waste_test::OpenedSession s;
    ASSERT_EQ(waste_model_open((dir / "tiny").c_str(), &options, &s.model, &error), WASTE_OK) << error.message;
    ASSERT_EQ(waste_session_create(s.model, &s.session, &error), WASTE_OK) << error.message;
    waste_tokenizer* tokenizer = nullptr;
    ASSERT_EQ(waste_model_tokenizer(s.model, nullptr, &tokenizer, &error), WASTE_OK) << error.message;
    std::unique_ptr<waste_tokenizer, void (*)(waste_tokenizer*)> tokenizer_owner(tokenizer, waste_tokenizer_free);
    const int32_t prompt[] = {1, 2, 3};
    auto run = [&](const waste_grammar* grammar, uint64_t seed, std::vector<int32_t>& tokens, std::string& text) {
        waste_session_reset(s.session, &error);
        EXPECT_EQ(waste_session_eval(s.session, prompt, 3, &error), WASTE_OK) << error.message;
        waste_sampler_options so;
        waste_sampler_options_init(&so);
        so.temperature = 1.2;
        so.seed = seed;
        waste_sampler* sampler = nullptr;
        EXPECT_EQ(waste_sampler_create(&so, &sampler, &error), WASTE_OK);
        waste_generate_options go;
        waste_generate_options_init(&go);
        go.max_tokens = 60;
        go.tokenizer = tokenizer;
        go.grammar = grammar;
        struct Out {
            std::vector<int32_t>* tokens;
            std::string* text;
        } out{&tokens, &text};
        waste_generate_result result{};
        EXPECT_EQ(waste_session_generate(s.session, sampler, &go,
                                         [](const waste_generated* step, void* user) {
                                             auto* o = static_cast<Out*>(user);
                                             if (step->token >= 0) o->tokens->push_back(step->token);
                                             o->text->append(step->text, step->text_length);
                                             return 0;
                                         },
                                         &out, &result, &error),
                  WASTE_OK)
            << error.message;
        waste_sampler_free(sampler);
        return result;
    };
    // No grammar: the same as drawing from waste_session_logits with the same sampler.
    std::vector<int32_t> generated;
    std::string text;
    run(nullptr, 7, generated, text);
    waste_session_reset(s.session, &error);
    ASSERT_EQ(waste_session_eval(s.session, prompt, 3, &error), WASTE_OK);
    waste_sampler_options so;
    waste_sampler_options_init(&so);
    so.temperature = 1.2;
    so.seed = 7;
    waste_sampler* sampler = nullptr;
    ASSERT_EQ(waste_sampler_create(&so, &sampler, &error), WASTE_OK);
    std::vector<int32_t> manual;
    const int32_t eos = waste_tokenizer_eos(tokenizer);
    for (size_t i = 0; i < generated.size(); ++i) {
        const float* logits = nullptr;
        size_t vocab = 0;
        ASSERT_EQ(waste_session_logits(s.session, &logits, &vocab, &error), WASTE_OK);
        int32_t token = -1;
        ASSERT_EQ(waste_sampler_sample(sampler, logits, vocab, &token, nullptr, &error), WASTE_OK);
        manual.push_back(token);
        if (token == eos) break;
        ASSERT_EQ(waste_session_eval(s.session, &token, 1, &error), WASTE_OK);
    }
    waste_sampler_free(sampler);
    EXPECT_EQ(generated, manual);

    // With a grammar: every completed output is a sentence of it.
    const std::string gbnf = "root ::= \"[\" [0-9]+ (\", \" [0-9]+){0,3} \"]\"\n";
    auto grammar = compile(tokenizer, WASTE_GRAMMAR_GBNF, gbnf);
    const auto parsed = parse_gbnf(gbnf);
    int completed = 0;
    for (uint64_t seed = 1; seed <= 6; ++seed) {
        std::vector<int32_t> tokens;
        std::string out;
        const auto result = run(grammar.get(), seed, tokens, out);
        EXPECT_TRUE(matcher_accepts(parsed, out) || result.stop_reason == WASTE_STOP_LENGTH) << out;
        if (result.stop_reason == WASTE_STOP_EOS || result.stop_reason == WASTE_STOP_GRAMMAR) {
            ++completed;
            EXPECT_TRUE(matcher_accepts(parsed, out)) << out;
            EXPECT_EQ(oracle(gbnf, {out}), std::vector<int>{1}) << out;
        }
    }
    EXPECT_GT(completed, 0);
}

// The mask (the run classes' sets, their mixed tokens' checks and the trie
// walk, with the per-state cache) against the plainest definition: a token is
// allowed exactly when a separate ByteMatcher takes its bytes from the state
// so far. Compared bit for bit at every step of random generations, on
// kimi-mini's vocabulary, `waste synth`'s K3-size one (163,840 ids) and
// kimi-mini's ranks and pairs (163,840, with punctuation, digits and split
// UTF-8 characters), under a nested JSON Schema, any JSON, and GBNF grammars
// with bounded runs of wide and multi-byte classes and overlapping classes.
TEST(Grammar, MaskEqualsAPerTokenCheckAlongRandomGenerations) {
    const std::string schema = R"({"type":"object","properties":{
        "id":{"type":"integer","minimum":0,"maximum":100000},
        "name":{"type":"string","minLength":2,"maxLength":40},
        "tags":{"type":"array","items":{"type":"string","maxLength":3},"maxItems":4},
        "owner":{"type":"object","properties":{"email":{"type":"string"},"since":{"type":"string","format":"date"}},"required":["email"]},
        "items":{"type":"array","maxItems":3,"items":{"type":"object","properties":{"sku":{"type":"string","pattern":"^[A-Z]{3}-\\d{4}$"},
                 "note":{"anyOf":[{"type":"string","maxLength":30},{"type":"null"}]}},"required":["sku"]}}},"required":["id","name","owner","items"]})";
    const std::vector<std::string> grammar_texts = {
        waste::grammar::json_schema_to_gbnf(schema),
        waste::grammar::any_json_gbnf(),
        "root ::= \"\\\"\" [^\"\\\\]{2,9} \"\\\"\" ( [ぁ-ゟ]{1,3} | [a-z ]* \"!\" ) [^a]{2,5} \"end\"\n",
        "root ::= ( [^\"]{1,5} | [a-c]+ \"x\" | [é-ü]{1,2} )* \"\\\"\" [\\x00-\\U0010FFFF]{0,3} \"|\"\n",
        "root ::= ( [^a] | \"a\" \"b\"? )* \"!\"\n",
    };
    std::vector<std::shared_ptr<const waste::grammar::Grammar>> grammars;
    for (const auto& text : grammar_texts) grammars.push_back(std::make_shared<const waste::grammar::Grammar>(parse_gbnf(text)));

    waste_test::SynthTokenizer k3_size;
    ASSERT_NO_FATAL_FAILURE(waste_test::open_synth_tokenizer(k3_size, 163840, 8));  // a few grammars at once, each a slot
    waste_tokenizer* const k3 = k3_size.tokenizer;
    std::vector<std::string> pairs = kimi_pieces();
    {
        const std::vector<std::string> pieces = pairs;
        std::set<std::string> seen(pieces.begin(), pieces.end());
        std::mt19937 pick(11);
        while (pairs.size() < 163840) {
            std::string pair = pieces[pick() % pieces.size()] + pieces[pick() % pieces.size()];
            if (pair.size() <= 16 && seen.insert(pair).second) pairs.push_back(pair);
        }
    }
    struct Vocabulary {
        const char* name;
        std::shared_ptr<const waste::grammar::VocabularyTrie> trie;
        int steps;  // per generation: the check costs a walk of every token per step
    };
#ifdef WASTE_UNDER_SANITIZER
    // ~20x slower there: fewer steps on the 163,840-token vocabularies
    // (the release build runs 40 a generation).
    constexpr int large_steps = 10;
#else
    constexpr int large_steps = 40;
#endif
    const Vocabulary vocabularies[] = {
        {"kimi-mini", std::make_shared<const waste::grammar::VocabularyTrie>(
                          waste::grammar::VocabularyTrie::from_tokenizer(*kimi_tokenizer()->tokenizer)), 150},
        {"waste synth K3-size", std::make_shared<const waste::grammar::VocabularyTrie>(
                                    waste::grammar::VocabularyTrie::from_tokenizer(*k3->tokenizer)), large_steps},
        {"kimi-mini ranks and pairs", std::make_shared<const waste::grammar::VocabularyTrie>(pairs), large_steps},
    };

    std::mt19937_64 random(5);
    size_t states_checked = 0, inside_characters = 0;  // the latter: a token ended inside a UTF-8 character
    for (const Vocabulary& v : vocabularies) {
        const uint32_t vocab = v.trie->vocab();
        for (size_t gi = 0; gi < grammars.size(); ++gi) {
            auto runs = std::make_shared<const waste::grammar::RunClasses>(*grammars[gi], *v.trie);
            for (int run = 0; run < 2; ++run) {
                waste::grammar::TokenMasker masker(grammars[gi], v.trie, runs);
                ByteMatcher oracle(*grammars[gi]);
                int32_t state = oracle.initial();
                for (int step = 0; step < v.steps; ++step) {
                    const waste::grammar::TokenBits& bits = masker.allowed();
                    std::vector<int32_t> allowed, splitting;
                    size_t mismatches = 0;
                    for (uint32_t id = 0; id < vocab; ++id) {
                        const std::string& bytes = v.trie->bytes(static_cast<int32_t>(id));
                        const bool expected = !bytes.empty() && oracle.walk(state, bytes) != ByteMatcher::dead;
                        const bool got = (bits[id / 64] >> (id % 64)) & 1u;
                        if (expected != got && ++mismatches <= 3)
                            ADD_FAILURE() << v.name << ", grammar " << gi << ", generation " << run << ", step " << step << ": token " << id
                                          << " (" << hex(bytes) << ") " << (got ? "allowed" : "refused") << " by the mask, "
                                          << (expected ? "taken" : "refused") << " by the matcher";
                        if (expected) allowed.push_back(static_cast<int32_t>(id));
                        // ends on a lead byte: the next state is inside a character
                        if (expected && static_cast<uint8_t>(bytes.back()) >= 0xC0) splitting.push_back(static_cast<int32_t>(id));
                    }
                    ++states_checked;
                    inside_characters += !oracle.at_boundary(state);
                    ASSERT_EQ(mismatches, 0u) << v.name << ", grammar " << gi;
                    if (allowed.empty() || (masker.can_end() && random() % 8 == 0)) break;
                    // A third of the steps split a character where a token can,
                    // so that states inside one are checked too.
                    const int32_t token = !splitting.empty() && random() % 3 == 0 ? splitting[random() % splitting.size()]
                                                                                : allowed[random() % allowed.size()];
                    ASSERT_TRUE(masker.accept(token, {}));
                    state = oracle.walk(state, v.trie->bytes(token));
                    ASSERT_NE(state, ByteMatcher::dead);
                }
            }
        }
    }
    fmt::print("{} masks compared with the per-token check, {} of them inside a character\n", states_checked, inside_characters);
    EXPECT_GT(states_checked, 500u);
    EXPECT_GT(inside_characters, 10u);
}

// Not a check: the measurement behind docs/bench-log/constrained-decoding.md.
// Run with
//   build/release/grammar_test --gtest_also_run_disabled_tests --gtest_filter='*MaskCost*'
// Wall time and the thread's CPU time are both printed: on a shared machine
// a preemption inside one mask (a scheduler slice, ~4 ms) lands in the wall
// time's p99, not in the CPU time.
// It masks and accepts along random-logit generations under a nested JSON
// schema on three vocabularies: the K3-size synthetic one (163,840 ids:
// 163,584 ranks of `waste synth`'s tokenizer and its specials), kimi-mini's,
// and a 163,840-token one made of kimi-mini's ranks and concatenations of two
// of them (at most 16 bytes: punctuation, digits and multi-byte pieces, the
// harder case). It prints the per-token mask time's median, p99 and max.
// tools/llama-cpp/bench_grammar.sh times llama.cpp's grammar sampler the same
// way on the first two; its copy of the schema, tools/llama-cpp/
// mask_cost_schema.json, must stay equal to this one (the script checks).
double thread_cpu_ms() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) * 1e-6;
}

TEST(GrammarBench, DISABLED_MaskCost) {
    const std::string schema = R"({"type":"object","properties":{
        "id":{"type":"integer","minimum":0,"maximum":100000},
        "name":{"type":"string","maxLength":40},
        "tags":{"type":"array","items":{"type":"string","maxLength":12},"maxItems":4},
        "owner":{"type":"object","properties":{"email":{"type":"string"},"since":{"type":"string","format":"date"},
                 "roles":{"type":"array","items":{"enum":["admin","dev","ops"]},"maxItems":3}},"required":["email"]},
        "items":{"type":"array","maxItems":3,"items":{"type":"object","properties":{"sku":{"type":"string","pattern":"^[A-Z]{3}-\\d{4}$"},
                 "qty":{"type":"integer","minimum":1,"maximum":99},"note":{"anyOf":[{"type":"string","maxLength":30},{"type":"null"}]}},
                 "required":["sku","qty"]}}},"required":["id","name","owner","items"]})";
    waste_test::SynthTokenizer k3_size;
    ASSERT_NO_FATAL_FAILURE(waste_test::open_synth_tokenizer(k3_size, 163840, 8));  // a few grammars at once, each a slot
    waste_tokenizer* const k3 = k3_size.tokenizer;
    waste_error error{};

    // One line per vocabulary. `mask(logits)` masks, `accept(id)` advances,
    // `reset()` starts a generation. Logits: N(0, 3) noise, drawn once and
    // read at a random offset each step (drawing 163,840 normals a token
    // made the benchmark minutes long); the argmax of the allowed is taken.
    auto measure = [](const char* name, uint32_t vocab, double compile_ms, auto reset, auto mask, auto accept) {
        std::vector<double> times, cpu;
        size_t outputs = 0, tokens = 0;
        std::mt19937_64 random(42);
        std::normal_distribution<float> normal(0.0f, 3.0f);
        std::vector<float> noise(2 * (vocab + 1));
        for (auto& l : noise) l = normal(random);
        std::vector<float> logits(vocab + 1);
        const auto end = static_cast<int32_t>(vocab);
        for (int run = 0; run < 8; ++run) {
            reset();
            for (int step = 0; step < 400; ++step) {
                const size_t offset = random() % (vocab + 1);
                std::copy(noise.begin() + static_cast<std::ptrdiff_t>(offset),
                          noise.begin() + static_cast<std::ptrdiff_t>(offset + vocab + 1), logits.begin());
                const auto start = std::chrono::steady_clock::now();
                const double cpu_start = thread_cpu_ms();
                mask(logits);
                cpu.push_back(thread_cpu_ms() - cpu_start);
                times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
                const auto best = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
                ASSERT_TRUE(accept(best));
                ++tokens;
                if (best == end) {
                    ++outputs;
                    break;
                }
            }
        }
        std::sort(times.begin(), times.end());
        std::sort(cpu.begin(), cpu.end());
        fmt::print("{} (vocab {}): compile {:.1f} ms; {} tokens, {} complete outputs; mask per token median {:.3f} ms, p99 {:.3f} ms, "
                   "max {:.3f} ms; thread CPU time median {:.3f} ms, p99 {:.3f} ms, max {:.3f} ms\n",
                   name, vocab, compile_ms, tokens, outputs, times[times.size() / 2], times[times.size() * 99 / 100], times.back(),
                   cpu[cpu.size() / 2], cpu[cpu.size() * 99 / 100], cpu.back());
    };

    // Through the C API, as the server runs it.
    for (auto [name, tokenizer] : {std::pair{"waste synth K3-size", k3}, std::pair{"kimi-mini", kimi_tokenizer()}}) {
        const uint32_t vocab = waste_tokenizer_token_count(tokenizer);
        const int32_t end = static_cast<int32_t>(vocab);
        const auto compile_start = std::chrono::steady_clock::now();
        auto grammar = compile(tokenizer, WASTE_GRAMMAR_JSON_SCHEMA, schema);
        const double compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - compile_start).count();
        StatePtr state;
        measure(
            name, vocab, compile_ms,
            [&] {
                waste_grammar_state* raw = nullptr;
                ASSERT_EQ(waste_grammar_state_create(grammar.get(), &end, 1, &raw, &error), WASTE_OK);
                state.reset(raw);
            },
            [&](std::vector<float>& logits) {
                size_t allowed = 0;
                ASSERT_EQ(waste_grammar_state_mask(state.get(), logits.data(), logits.size(), &allowed, &error), WASTE_OK);
            },
            [&](int32_t id) { return waste_grammar_state_accept(state.get(), id, &error) == WASTE_OK; });
    }

    // kimi-mini's ranks and pairs of them, through the masker itself.
    const std::vector<std::string> pieces = kimi_pieces();
    std::vector<std::string> bytes = pieces;
    std::set<std::string> seen(bytes.begin(), bytes.end());
    std::mt19937 pick(7);
    while (bytes.size() < 163840) {
        std::string pair = pieces[pick() % pieces.size()] + pieces[pick() % pieces.size()];
        if (pair.size() <= 16 && seen.insert(pair).second) bytes.push_back(pair);
    }
    const auto compile_start = std::chrono::steady_clock::now();
    auto g = std::make_shared<const waste::grammar::Grammar>(parse_gbnf(waste::grammar::json_schema_to_gbnf(schema)));
    auto trie = std::make_shared<const waste::grammar::VocabularyTrie>(bytes);
    auto runs = std::make_shared<const waste::grammar::RunClasses>(*g, *trie);
    const double compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - compile_start).count();
    fmt::print("kimi-mini pairs: {} trie nodes;", trie->nodes().size());
    for (const auto& run : runs->runs()) fmt::print(" run class: {} tokens leave it, pure ones up to {} characters;", run.mixed.size(), run.chars);
    fmt::print("\n");
    const std::vector<int32_t> ends{static_cast<int32_t>(bytes.size())};
    std::unique_ptr<waste::grammar::TokenMasker> masker;
    measure(
        "kimi-mini ranks and pairs", static_cast<uint32_t>(bytes.size()), compile_ms,
        [&] { masker = std::make_unique<waste::grammar::TokenMasker>(g, trie, runs); },
        [&](std::vector<float>& logits) { masker->mask_logits(logits, ends); },
        [&](int32_t id) { return masker->accept(id, ends); });
}
