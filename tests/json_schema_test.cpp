// json_schema_test.cpp — JSON Schema constrained decoding (src/grammar/
// json_schema.h): schemas generated at random (nested objects, optional
// fields, enums, bounded arrays, $ref, anyOf, formats, integer bounds,
// patterns) are compiled for kimi-mini and sampled from it at temperature
// 1.0-1.5 with several seeds; a real validator (ajv 2020 + ajv-formats,
// tools/json-schema-validator, pinned) then checks every output.
//
// Tolerance: none. Every output that ended (EOS, or the grammar complete)
// must parse and validate — 100%; outputs cut by max_tokens are counted as
// length and not judged. Refusals must name the keyword and its path.
#include <algorithm>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "grammar/byte_matcher.h"
#include "grammar/gbnf_parser.h"
#include "grammar/json_schema.h"
#include "platform/error.h"
#include "test_support.h"
#include "waste/waste.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

fs::path validator_dir() { return waste_test::source_dir() / "tools" / "json-schema-validator"; }
bool validator_installed() { return fs::exists(validator_dir() / "node_modules" / "ajv" / "dist" / "2020.js"); }
#define VALIDATOR_MISSING "tools/json-schema-validator/node_modules is missing: run scripts/setup.sh (npm ci there)"

// A random schema of the kinds the issue lists.
class SchemaMaker {
public:
    explicit SchemaMaker(uint64_t seed) : random_(seed) {}

    json make() {
        defs_ = json::object();
        json schema = object(0);
        if (!defs_.empty()) schema["$defs"] = defs_;
        return schema;
    }

private:
    size_t pick(size_t n) { return static_cast<size_t>(random_() % n); }

    json scalar() {
        switch (pick(11)) {
            case 0: return {{"type", "string"}};
            case 1: return {{"type", "string"}, {"maxLength", 1 + pick(12)}, {"minLength", pick(2)}};
            case 2: return {{"enum", json::array({"red", "green", "blue", 3, nullptr})}};
            case 3: return {{"type", "integer"}, {"minimum", static_cast<int>(pick(50)) - 20}, {"maximum", 30 + static_cast<int>(pick(2000))}};
            case 4: return {{"type", "integer"}, {"exclusiveMinimum", 0}};
            case 5: return {{"type", "number"}};
            case 6: return {{"type", "boolean"}};
            case 7: return {{"type", "string"}, {"format", std::vector<const char*>{"date", "time", "date-time", "uuid"}[pick(4)]}};
            case 8: return {{"type", "string"}, {"pattern", std::vector<const char*>{"^[A-Z]{2}-\\d{3}$", "^(yes|no)$", "^\\w+@\\w+\\.com$", "ab+c"}[pick(4)]}};
            case 9: return {{"const", "fixed"}};
            default: return {{"type", json::array({"string", "null"})}, {"maxLength", 8}};
        }
    }

    json value(size_t depth) {
        const size_t kind = pick(depth >= 2 ? 2 : 6);
        if (kind <= 1) return scalar();
        if (kind == 2) return object(depth + 1);
        if (kind == 3) {
            json a = {{"type", "array"}, {"items", depth >= 1 ? scalar() : value(depth + 1)}};
            const size_t min = pick(3);
            a["minItems"] = min;
            a["maxItems"] = min + pick(3);
            return a;
        }
        if (kind == 4) return {{"anyOf", json::array({scalar(), scalar()})}};
        // a $ref into $defs
        const std::string name = fmt::format("def{}", defs_.size());
        defs_[name] = true;  // reserve the name first: the object below may add defs of its own
        defs_[name] = depth >= 1 ? scalar() : object(depth + 1);
        return {{"$ref", "#/$defs/" + name}};
    }

    json object(size_t depth) {
        static const char* names[] = {"id", "name", "tags", "count", "when", "kind", "child", "score", "note", "ok"};
        json o = {{"type", "object"}, {"properties", json::object()}};
        json required = json::array();
        const size_t n = 1 + pick(4);
        for (size_t i = 0; i < n; ++i) {
            const std::string key = names[pick(10)];
            if (o["properties"].contains(key)) continue;
            o["properties"][key] = value(depth);
            if (pick(2)) required.push_back(key);
        }
        if (!required.empty()) o["required"] = required;
        if (pick(2)) o["additionalProperties"] = false;
        return o;
    }

    std::mt19937_64 random_;
    json defs_;
};

bool accepts(const std::string& gbnf, const std::string& text) {
    const auto g = waste::grammar::parse_gbnf(gbnf);
    waste::grammar::ByteMatcher m(g);
    const int32_t s = m.walk(m.initial(), text);
    return s != waste::grammar::ByteMatcher::dead && m.can_end(s);
}

std::string refusal(const std::string& schema) {
    try {
        waste::grammar::parse_gbnf(waste::grammar::json_schema_to_gbnf(schema));
    } catch (const waste::Error& e) {
        return e.what();
    }
    return "";
}

// Tagged unions as they are written in practice: the issue's own; Pydantic
// v2's discriminated union ($defs, $ref branches, a Literal tag written as
// const with type, the "discriminator" keyword); the same without the
// keyword; enum tags; a union nested in a branch; branches told apart by
// type; closed objects told apart by their required names.
std::vector<nlohmann::ordered_json> discriminated_unions() {
    using json = nlohmann::ordered_json;  // properties in the schema's order, as the grammar writes them
    return {
        json::parse(R"({"oneOf": [
          {"type": "object", "properties": {"t": {"const": "a"}, "v": {"type": "integer"}}, "required": ["t", "v"], "additionalProperties": false},
          {"type": "object", "properties": {"t": {"const": "b"}, "w": {"type": "string", "maxLength": 8}}, "required": ["t", "w"], "additionalProperties": false}]})"),
        json::parse(R"({"$defs": {
            "Cat": {"properties": {"pet_type": {"const": "cat", "title": "Pet Type", "type": "string"}, "meows": {"title": "Meows", "type": "integer", "minimum": 0, "maximum": 99}},
                    "required": ["pet_type", "meows"], "title": "Cat", "type": "object"},
            "Dog": {"properties": {"pet_type": {"const": "dog", "title": "Pet Type", "type": "string"}, "barks": {"title": "Barks", "type": "boolean"}},
                    "required": ["pet_type", "barks"], "title": "Dog", "type": "object"}},
          "properties": {"pet": {"discriminator": {"mapping": {"cat": "#/$defs/Cat", "dog": "#/$defs/Dog"}, "propertyName": "pet_type"},
                                 "oneOf": [{"$ref": "#/$defs/Cat"}, {"$ref": "#/$defs/Dog"}], "title": "Pet"},
                         "n": {"title": "N", "type": "integer", "minimum": 0, "maximum": 9}},
          "required": ["pet", "n"], "title": "Model", "type": "object"})"),
        json::parse(R"({"$defs": {
            "Cat": {"properties": {"pet_type": {"enum": ["cat"], "type": "string"}, "meows": {"type": "integer", "minimum": 0, "maximum": 99}}, "required": ["pet_type", "meows"], "type": "object"},
            "Dog": {"properties": {"pet_type": {"enum": ["dog", "puppy"], "type": "string"}, "barks": {"type": "boolean"}}, "required": ["pet_type", "barks"], "type": "object"}},
          "oneOf": [{"$ref": "#/$defs/Cat"}, {"$ref": "#/$defs/Dog"}]})"),
        json::parse(R"({"oneOf": [
          {"type": "object", "properties": {"kind": {"const": "shape"}, "shape": {"oneOf": [
              {"type": "object", "properties": {"form": {"const": "circle"}, "r": {"type": "integer", "minimum": 1, "maximum": 9}}, "required": ["form", "r"], "additionalProperties": false},
              {"type": "object", "properties": {"form": {"const": "square"}, "side": {"type": "integer", "minimum": 1, "maximum": 9}}, "required": ["form", "side"], "additionalProperties": false}]}},
           "required": ["kind", "shape"], "additionalProperties": false},
          {"type": "object", "properties": {"kind": {"const": "none"}}, "required": ["kind"], "additionalProperties": false}]})"),
        json::parse(R"({"oneOf": [{"type": "string", "maxLength": 6}, {"type": "integer", "minimum": 0, "maximum": 999},
                                  {"type": "object", "properties": {"x": {"type": "boolean"}}, "required": ["x"], "additionalProperties": false},
                                  {"type": "null"}]})"),
        json::parse(R"({"oneOf": [
          {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"], "additionalProperties": false},
          {"type": "object", "properties": {"error": {"type": "string", "maxLength": 8}}, "required": ["error"], "additionalProperties": false}]})"),
    };
}

}  // namespace

// oneOf branches that cannot overlap are enforced as written; the grammar
// accepts each branch's values and nothing else.
TEST(JsonSchema, DisjointOneOfIsEnforced) {
    const auto unions = discriminated_unions();
    const std::string issue = waste::grammar::json_schema_to_gbnf(unions[0].dump());
    EXPECT_TRUE(accepts(issue, R"({"t":"a","v":5})"));
    EXPECT_TRUE(accepts(issue, R"({"t": "b", "w": "word"})"));
    EXPECT_FALSE(accepts(issue, R"({"t":"a","w":"word"})"));   // a's tag with b's body
    EXPECT_FALSE(accepts(issue, R"({"t":"c","v":5})"));
    EXPECT_FALSE(accepts(issue, R"({"t":"b","w":"too long a word"})"));
    const std::string pydantic = waste::grammar::json_schema_to_gbnf(unions[1].dump());
    EXPECT_TRUE(accepts(pydantic, R"({"pet":{"pet_type":"cat","meows":3},"n":1})"));
    EXPECT_TRUE(accepts(pydantic, R"({"pet":{"pet_type":"dog","barks":true},"n":0})"));
    EXPECT_FALSE(accepts(pydantic, R"({"pet":{"pet_type":"dog","meows":3},"n":1})"));
    const std::string enums = waste::grammar::json_schema_to_gbnf(unions[2].dump());
    EXPECT_TRUE(accepts(enums, R"({"pet_type":"puppy","barks":false})"));
    EXPECT_FALSE(accepts(enums, R"({"pet_type":"puppy","meows":1})"));
    const std::string nested = waste::grammar::json_schema_to_gbnf(unions[3].dump());
    EXPECT_TRUE(accepts(nested, R"({"kind":"shape","shape":{"form":"square","side":4}})"));
    EXPECT_TRUE(accepts(nested, R"({"kind":"none"})"));
    EXPECT_FALSE(accepts(nested, R"({"kind":"shape","shape":{"form":"square","r":4}})"));
    EXPECT_FALSE(accepts(nested, R"({"kind":"none","shape":{"form":"circle","r":1}})"));
    const std::string by_type = waste::grammar::json_schema_to_gbnf(unions[4].dump());
    EXPECT_TRUE(accepts(by_type, R"("abc")"));
    EXPECT_TRUE(accepts(by_type, "42"));
    EXPECT_TRUE(accepts(by_type, "null"));
    EXPECT_TRUE(accepts(by_type, R"({"x":true})"));
    EXPECT_FALSE(accepts(by_type, "true"));
    const std::string closed = waste::grammar::json_schema_to_gbnf(unions[5].dump());
    EXPECT_TRUE(accepts(closed, R"({"ok":true})"));
    EXPECT_TRUE(accepts(closed, R"({"error":"no"})"));
    EXPECT_FALSE(accepts(closed, R"({"ok":true,"error":"no"})"));
    // const and enum values of different types; numbers by value (1 is 1.0)
    EXPECT_TRUE(refusal(R"({"oneOf":[{"const":1},{"const":"1"},{"enum":[2,3.5,null]}]})").empty());
    EXPECT_TRUE(refusal(R"({"oneOf":[{"type":"integer"},{"type":"number","exclusiveMinimum":0}]})").find("branches 0 and 1") != std::string::npos);
    EXPECT_TRUE(refusal(R"({"oneOf":[{"type":"integer"},{"type":"string"},{"type":"array","items":{"type":"null"}}]})").empty());
}

// oneOf that no rule proves disjoint is refused, naming the branches; so is
// "type" beside const/enum that no value can meet.
TEST(JsonSchema, OverlappingOneOfIsRefused) {
    const char* overlapping[] = {
        // one type, no tag
        R"({"oneOf":[{"type":"string"},{"type":"string","maxLength":2}]})",
        // a const string against any string (was accepted before issue 37)
        R"({"oneOf":[{"const":"a"},{"type":"string"}]})",
        // numbers by value: 1 and 1.0 are the same number
        R"({"oneOf":[{"const":1},{"const":1.0}]})",
        R"({"oneOf":[{"enum":["x","y"]},{"enum":["y","z"]}]})",
        // the same tag in both branches
        R"({"oneOf":[{"type":"object","properties":{"t":{"const":"a"},"v":{"type":"integer"}},"required":["t","v"]},
                     {"type":"object","properties":{"t":{"const":"a"},"w":{"type":"string"}},"required":["t","w"]}]})",
        // the tag required in one branch only: {"t":"a","w":"x"} can match both
        R"({"oneOf":[{"type":"object","properties":{"t":{"const":"a"}},"required":["t"]},
                     {"type":"object","properties":{"t":{"const":"b"},"w":{"type":"string"}},"required":["w"]}]})",
        // open objects with different required names: {"a":1,"b":2} matches both
        R"({"oneOf":[{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]},
                     {"type":"object","properties":{"b":{"type":"integer"}},"required":["b"]}]})",
        // a branch without "type" allows every type (maxLength binds strings only)
        R"({"oneOf":[{"type":"integer"},{"maxLength":2}]})",
        // a nested union whose branches overlap the other branch
        R"({"oneOf":[{"anyOf":[{"type":"integer"},{"type":"string"}]},{"type":"string","maxLength":3}]})",
    };
    for (const char* schema : overlapping) {
        SCOPED_TRACE(schema);
        const std::string message = refusal(schema);
        EXPECT_NE(message.find("json schema at /oneOf: oneOf whose branches may overlap"), std::string::npos) << message;
        EXPECT_NE(message.find("branches 0 and 1"), std::string::npos) << message;
    }
    EXPECT_NE(refusal(R"({"oneOf":[{"type":"null"},{"type":"string"},{"type":"string","maxLength":1}]})").find("branches 1 and 2"),
              std::string::npos);
    EXPECT_NE(refusal(R"({"const":"a","type":"integer"})").find("json schema at /type: value \"a\" is not of type \"integer\""),
              std::string::npos)
        << refusal(R"({"const":"a","type":"integer"})");
    EXPECT_NE(refusal(R"({"enum":[1,"b"],"type":"integer"})").find("value \"b\""), std::string::npos);
    EXPECT_TRUE(refusal(R"({"enum":[1,2.0],"type":"integer"})").empty());
    // $refs that double at each level: the proof's bound answers, not the clock
    json defs = json::object();
    for (int i = 0; i < 40; ++i)
        defs[fmt::format("d{}", i)] = {{"anyOf", json::array({{{"$ref", fmt::format("#/$defs/d{}", i + 1)}},
                                                              {{"$ref", fmt::format("#/$defs/d{}", i + 1)}}})}};
    defs["d40"] = {{"type", "object"}, {"properties", {{"t", {{"const", "x"}}}}}, {"required", {"t"}}};
    const json doubling = {{"$defs", defs},
                           {"oneOf", json::array({{{"$ref", "#/$defs/d0"}}, {{"type", "object"}, {"properties", {{"t", {{"const", "y"}}}}}, {"required", {"t"}}}})}};
    EXPECT_NE(refusal(doubling.dump()).find("comparisons"), std::string::npos) << refusal(doubling.dump());
}

// Integer bounds are exact: every integer in [-1200, 1200] is accepted iff in range.
TEST(JsonSchema, IntegerBoundsAreExact) {
    struct Case {
        const char* schema;
        long lo, hi;
    };
    const Case cases[] = {{R"({"type":"integer","minimum":-37,"maximum":1105})", -37, 1105},
                          {R"({"type":"integer","minimum":5})", 5, 100000},
                          {R"({"type":"integer","maximum":-3})", -100000, -3},
                          {R"({"type":"integer","exclusiveMinimum":0,"exclusiveMaximum":100})", 1, 99},
                          {R"({"type":"integer","minimum":100,"maximum":100})", 100, 100},
                          {R"({"type":"integer","minimum":-999,"maximum":-10})", -999, -10}};
    for (const auto& c : cases) {
        SCOPED_TRACE(c.schema);
        const std::string gbnf = waste::grammar::json_schema_to_gbnf(c.schema);
        const auto g = waste::grammar::parse_gbnf(gbnf);
        waste::grammar::ByteMatcher m(g);
        for (long v = -1200; v <= 1200; ++v) {
            const int32_t s = m.walk(m.initial(), std::to_string(v));
            const bool ok = s != waste::grammar::ByteMatcher::dead && m.can_end(s);
            ASSERT_EQ(ok, v >= c.lo && v <= c.hi) << v;
        }
        EXPECT_FALSE(accepts(gbnf, "007"));
        EXPECT_FALSE(accepts(gbnf, "-0"));
    }
}

TEST(JsonSchema, ShapesAcceptAndReject) {
    const std::string object = waste::grammar::json_schema_to_gbnf(
        R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string","maxLength":3},"c":{"type":"boolean"}},"required":["b"],"additionalProperties":false})");
    EXPECT_TRUE(accepts(object, R"({"b":"xy"})"));
    EXPECT_TRUE(accepts(object, R"({"a": 1, "b": "xyz", "c": true})"));
    EXPECT_TRUE(accepts(object, R"({"b":"","c":false})"));
    EXPECT_FALSE(accepts(object, R"({"a":1})"));            // b is required
    EXPECT_FALSE(accepts(object, R"({"b":"long"})"));       // maxLength
    EXPECT_FALSE(accepts(object, R"({"b":"x",})"));         // a trailing comma
    EXPECT_FALSE(accepts(object, R"({"b":"x","d":1})"));    // not listed
    const std::string tuple = waste::grammar::json_schema_to_gbnf(
        R"({"type":"array","prefixItems":[{"type":"integer"},{"enum":["x","y"]}],"items":{"type":"null"},"maxItems":3})");
    EXPECT_TRUE(accepts(tuple, R"([1, "x"])"));
    EXPECT_TRUE(accepts(tuple, R"([1,"y",null])"));
    EXPECT_TRUE(accepts(tuple, R"([])"));
    EXPECT_FALSE(accepts(tuple, R"([1,"y",null,null])"));
    EXPECT_FALSE(accepts(tuple, R"(["x"])"));
    const std::string bounded = waste::grammar::json_schema_to_gbnf(R"({"type":"array","items":{"type":"integer"},"minItems":2,"maxItems":3})");
    EXPECT_FALSE(accepts(bounded, "[1]"));
    EXPECT_TRUE(accepts(bounded, "[1,2]"));
    EXPECT_TRUE(accepts(bounded, "[1, 2, 3]"));
    EXPECT_FALSE(accepts(bounded, "[1,2,3,4]"));
    const std::string recursive = waste::grammar::json_schema_to_gbnf(
        R"({"$ref":"#/$defs/node","$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},"next":{"anyOf":[{"$ref":"#/$defs/node"},{"type":"null"}]}},"required":["v","next"],"additionalProperties":false}}})");
    EXPECT_TRUE(accepts(recursive, R"({"v":1,"next":{"v":2,"next":null}})"));
    EXPECT_FALSE(accepts(recursive, R"({"v":1,"next":{"v":2}})"));
    const std::string date = waste::grammar::json_schema_to_gbnf(R"({"type":"string","format":"date"})");
    EXPECT_TRUE(accepts(date, R"("2024-02-28")"));
    EXPECT_FALSE(accepts(date, R"("2024-02-30")"));
    EXPECT_FALSE(accepts(date, R"("2024-13-01")"));
    const std::string pattern = waste::grammar::json_schema_to_gbnf(R"({"type":"string","pattern":"^[A-Z]{2}-\\d{3}$"})");
    EXPECT_TRUE(accepts(pattern, R"("AB-123")"));
    EXPECT_FALSE(accepts(pattern, R"("AB-12")"));
    const std::string search = waste::grammar::json_schema_to_gbnf(R"({"type":"string","pattern":"ab+c"})");
    EXPECT_TRUE(accepts(search, R"("xxabbbcyy")"));
    EXPECT_FALSE(accepts(search, R"("xxacyy")"));
}

TEST(JsonSchema, UnenforceableKeywordsAreRefusedWithTheirPath) {
    EXPECT_NE(refusal(R"({"type":"object","properties":{"age":{"type":"integer","multipleOf":3}}})")
                  .find("json schema at /properties/age/multipleOf: keyword 'multipleOf' cannot be enforced"),
              std::string::npos)
        << refusal(R"({"type":"object","properties":{"age":{"type":"integer","multipleOf":3}}})");
    EXPECT_NE(refusal(R"({"type":"array","uniqueItems":true})").find("/uniqueItems"), std::string::npos);
    EXPECT_NE(refusal(R"({"type":"string","format":"email"})").find("format 'email' is not supported"), std::string::npos);
    EXPECT_NE(refusal(R"j({"type":"string","pattern":"(a)\\1"})j").find("backreferences"), std::string::npos);
    EXPECT_NE(refusal(R"j({"type":"string","pattern":"(?=a)"})j").find("lookaround"), std::string::npos);
    EXPECT_NE(refusal(R"({"type":"number","minimum":0.5})").find("/minimum"), std::string::npos);
    EXPECT_NE(refusal(R"({"oneOf":[{"type":"string"},{"type":"string","maxLength":2}]})").find("oneOf whose branches may overlap"), std::string::npos);
    EXPECT_NE(refusal(R"({"$ref":"#/$defs/missing"})").find("does not resolve"), std::string::npos);
    EXPECT_NE(refusal(R"({"type":"object","patternProperties":{}})").find("'patternProperties'"), std::string::npos);
    EXPECT_NE(refusal(R"({"type":"object", )").find("not JSON"), std::string::npos);
    EXPECT_NE(refusal("false").find("allows no value"), std::string::npos);
    EXPECT_NE(refusal(R"({"type":"widget"})").find("unknown type 'widget'"), std::string::npos);
    // a deep schema is refused, not a stack overflow
    std::string deep;
    for (int i = 0; i < 5000; ++i) deep += R"({"type":"array","items":)";
    deep += "true" + std::string(5000, '}');
    EXPECT_NE(refusal(deep).find("nested deeper"), std::string::npos) << refusal(deep).substr(0, 200);
}

// Samples kimi-mini under each schema (temperature 1.0-1.5, seven seeds
// cycling) and has ajv judge every completed output. One container for the
// suite: converting kimi-mini is the slow part.
class SampledSchemas : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        dir_ = new waste_test::TempDir;
        std::string output;
        container_ = new fs::path(*dir_ / "kimi-mini.waste");
        convert_status_ = waste_test::run_command(
            fmt::format("'{}' convert '{}' '{}' --json --train-vectors 8192 --iterations 4 2>&1", waste_test::cli_path().string(),
                        (waste_test::source_dir() / "models" / "kimi-mini").string(), container_->string()),
            &output);
        convert_output_ = new std::string(output);
    }
    static void TearDownTestSuite() {
        delete container_;
        delete convert_output_;
        delete dir_;
    }
    void SetUp() override {
        WASTE_REQUIRE_ORACLE(validator_installed(), VALIDATOR_MISSING);
        ASSERT_EQ(convert_status_, 0) << *convert_output_;
    }

    struct Tally {
        int completed = 0, valid = 0, truncated = 0;
    };

    // schema_of(i) gives the i-th schema; max_tokens bounds each output.
    template <typename SchemaOf>
    void sample(int count, SchemaOf schema_of, uint32_t max_tokens, Tally* tally) {
        waste_open_options options;
        waste_open_options_init(&options);
        options.context_length = 512;
        options.threads = 2;
        options.grammars = 1;  // one schema at a time
        waste_error error{};
        waste_test::OpenedSession s;
        ASSERT_EQ(waste_model_open(container_->c_str(), &options, &s.model, &error), WASTE_OK) << error.message;
        ASSERT_EQ(waste_session_create(s.model, &s.session, &error), WASTE_OK) << error.message;
        waste_tokenizer* tokenizer = nullptr;
        ASSERT_EQ(waste_model_tokenizer(s.model, nullptr, &tokenizer, &error), WASTE_OK) << error.message;
        std::unique_ptr<waste_tokenizer, void (*)(waste_tokenizer*)> tokenizer_owner(tokenizer, waste_tokenizer_free);
        int32_t* prompt = nullptr;
        size_t prompt_count = 0;
        const std::string prompt_text = "And the LORD said: ";
        ASSERT_EQ(waste_tokenizer_tokenize(tokenizer, prompt_text.data(), prompt_text.size(), 0, &prompt, &prompt_count, &error), WASTE_OK);
        const std::vector<int32_t> prompt_ids(prompt, prompt + prompt_count);
        waste_tokens_free(prompt);

        std::string lines;
        for (int i = 0; i < count; ++i) {
            const json schema = schema_of(i);
            const std::string text = schema.dump();
            waste_grammar* grammar = nullptr;
            ASSERT_EQ(waste_grammar_compile(tokenizer, WASTE_GRAMMAR_JSON_SCHEMA, text.data(), text.size(), &grammar, &error), WASTE_OK)
                << error.message << "\n" << text;
            ASSERT_EQ(waste_session_reset(s.session, &error), WASTE_OK);
            ASSERT_EQ(waste_session_eval(s.session, prompt_ids.data(), prompt_ids.size(), &error), WASTE_OK) << error.message;
            waste_sampler_options so;
            waste_sampler_options_init(&so);
            so.temperature = 1.0 + 0.1 * (i % 6);  // 1.0 .. 1.5
            so.seed = static_cast<uint64_t>(i % 7);  // seven seeds, cycling
            waste_sampler* sampler = nullptr;
            ASSERT_EQ(waste_sampler_create(&so, &sampler, &error), WASTE_OK);
            waste_generate_options go;
            waste_generate_options_init(&go);
            go.max_tokens = max_tokens;
            go.tokenizer = tokenizer;
            go.grammar = grammar;
            std::string out;
            waste_generate_result result{};
            ASSERT_EQ(waste_session_generate(s.session, sampler, &go,
                                             [](const waste_generated* step, void* user) {
                                                 static_cast<std::string*>(user)->append(step->text, step->text_length);
                                                 return 0;
                                             },
                                             &out, &result, &error),
                      WASTE_OK)
                << error.message << "\n" << text;
            waste_sampler_free(sampler);
            waste_grammar_free(grammar);
            if (result.stop_reason == WASTE_STOP_LENGTH) {
                ++tally->truncated;
                continue;
            }
            ASSERT_TRUE(result.stop_reason == WASTE_STOP_EOS || result.stop_reason == WASTE_STOP_GRAMMAR) << result.stop_reason;
            ++tally->completed;
            lines += json{{"schema", schema}, {"output", out}}.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
        }
        waste_test::TempDir judged;
        waste_test::write_file(judged / "outputs.jsonl", lines);
        std::string output;
        ASSERT_EQ(waste_test::run_command(fmt::format("node '{}' < '{}' > '{}' 2>&1", (validator_dir() / "validate.cjs").string(),
                                                      (judged / "outputs.jsonl").string(), (judged / "verdicts.txt").string()),
                                          &output),
                  0)
            << output;
        const std::string verdicts = waste_test::read_file(judged / "verdicts.txt");
        int line_number = 0;
        std::vector<std::string> outputs;
        for (size_t start = 0; start < lines.size();) {
            const size_t end = lines.find('\n', start);
            outputs.push_back(lines.substr(start, end - start));
            start = end + 1;
        }
        for (size_t start = 0; start < verdicts.size(); ++line_number) {
            const size_t end = verdicts.find('\n', start);
            const std::string verdict = verdicts.substr(start, end - start);
            start = end == std::string::npos ? verdicts.size() : end + 1;
            if (verdict == "valid") ++tally->valid;
            else ADD_FAILURE() << verdict << "\n" << outputs[static_cast<size_t>(line_number)];
        }
    }

    static waste_test::TempDir* dir_;
    static fs::path* container_;
    static std::string* convert_output_;
    static int convert_status_;
};
waste_test::TempDir* SampledSchemas::dir_ = nullptr;
fs::path* SampledSchemas::container_ = nullptr;
std::string* SampledSchemas::convert_output_ = nullptr;
int SampledSchemas::convert_status_ = -1;

// The issue's acceptance test: >= 200 generated schemas, kimi-mini sampling
// at temperature 1.0-1.5 with several seeds, ajv judging every completed output.
TEST_F(SampledSchemas, GeneratedSchemasValidateWithAjv) {
#ifdef WASTE_UNDER_SANITIZER
    // Sampled under the sanitizers: each schema's generation costs ~20x
    // there (the 210 ran past ctest's 15 minutes); the release build
    // asserts all 210.
    constexpr int schema_count = 12;
#else
    constexpr int schema_count = 210;
#endif
    Tally tally;
    sample(schema_count, [](int i) { return SchemaMaker(1000 + static_cast<uint64_t>(i)).make(); }, 192, &tally);
    fmt::print("json schema sampling: {} schemas, {} completed, {} valid, {} cut by length\n", schema_count, tally.completed,
               tally.valid, tally.truncated);
    EXPECT_EQ(tally.valid, tally.completed);
    // Enough complete outputs for the 100% to mean something.
    EXPECT_GE(tally.completed, schema_count / 4);
}

// Tagged unions (issue 37): every completed output is valid under ajv, which
// checks oneOf's "exactly one branch" itself.
TEST_F(SampledSchemas, DiscriminatedUnionsValidateWithAjv) {
    const auto unions = discriminated_unions();
#ifdef WASTE_UNDER_SANITIZER
    const int count = static_cast<int>(unions.size());  // each once
#else
    const int count = static_cast<int>(unions.size()) * 7;  // each under seven seeds
#endif
    Tally tally;
    sample(count, [&](int i) { return json::parse(unions[static_cast<size_t>(i) % unions.size()].dump()); }, 96, &tally);
    fmt::print("discriminated unions: {} samples, {} completed, {} valid, {} cut by length\n", count, tally.completed,
               tally.valid, tally.truncated);
    EXPECT_EQ(tally.valid, tally.completed);
    EXPECT_GE(tally.completed, count / 4);
}
