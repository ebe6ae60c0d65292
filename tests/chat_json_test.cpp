// chat_json_test.cpp — the JSON text K3's prompts carry (src/chat/xtml_json,
// k3-chat.md §5.4, §6): Python's json.dumps forms and float repr, exactly
// (the expected strings are what CPython 3 prints for the same values), and
// bounded parsing.
#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "chat/xtml_json.h"

using waste::chat::Json;
using waste::chat::JsonForm;
using waste::chat::python_float_repr;
using waste::chat::python_json_dumps;

TEST(ChatJson, FloatReprLikePython) {
    const std::pair<double, const char*> cases[] = {
        {1.0, "1.0"},         {1.5, "1.5"},         {0.1, "0.1"},          {1e-05, "1e-05"},
        {0.0001, "0.0001"},   {1e16, "1e+16"},      {1e15, "1000000000000000.0"},
        {1.5e300, "1.5e+300"}, {-0.0, "-0.0"},      {0.0, "0.0"},          {123456789.125, "123456789.125"},
        {2.5e-07, "2.5e-07"}, {-3.25, "-3.25"},     {1.7976931348623157e308, "1.7976931348623157e+308"},
        {5e-324, "5e-324"},   {9999999999999998.0, "9999999999999998.0"}, {0.30000000000000004, "0.30000000000000004"},
        {12345678901234567890.0, "1.2345678901234567e+19"},
    };
    for (const auto& [value, text] : cases) EXPECT_EQ(python_float_repr(value), text) << value;
}

TEST(ChatJson, DeclarationFormSortsAndIsCompact) {
    const Json value = Json::parse(R"({"b": [1, 1.0, true, null, "x"], "a": {"d": "é/\u007f", "c": "\"\\\n\r\t\b\f\u0001\u001f"}})");
    EXPECT_EQ(python_json_dumps(value, JsonForm::declaration),
              "{\"a\":{\"c\":\"\\\"\\\\\\n\\r\\t\\b\\f\\u0001\\u001f\",\"d\":\"é/\x7f\"},\"b\":[1,1.0,true,null,\"x\"]}");
}

TEST(ChatJson, ArgumentFormKeepsOrderAndSpaces) {
    const Json value = Json::parse(R"({"z": {}, "a": [], "m": [1, "two", null, -7, 18446744073709551615, 2.0e1]})");
    EXPECT_EQ(python_json_dumps(value, JsonForm::argument),
              "{\"z\": {}, \"a\": [], \"m\": [1, \"two\", null, -7, 18446744073709551615, 20.0]}");
}

TEST(ChatJson, SortKeysByCodePoint) {
    const Json value = Json::parse(R"({"é": 1, "z": 2, "Z": 3, "aa": 4, "a": 5})");
    EXPECT_EQ(python_json_dumps(value, JsonForm::declaration), "{\"Z\":3,\"a\":5,\"aa\":4,\"z\":2,\"é\":1}");
}

TEST(ChatJson, BoundedParsing) {
    Json out;
    std::string why;
    EXPECT_TRUE(waste::chat::parse_json_bounded(R"({"a": [[["x"]]], "a": 2, "b": "[[[["})", out, &why)) << why;
    EXPECT_EQ(out.dump(), R"({"a":2,"b":"[[[["})");  // a repeated key: first place, last value (as json.loads)
    EXPECT_FALSE(waste::chat::parse_json_bounded(std::string(65, '[') + std::string(65, ']'), out, &why));
    EXPECT_NE(why.find("deeper"), std::string::npos);
    EXPECT_TRUE(waste::chat::parse_json_bounded(std::string(64, '[') + std::string(64, ']'), out, &why)) << why;
    EXPECT_FALSE(waste::chat::parse_json_bounded("{\"a\": 1e400}", out, &why));
    EXPECT_FALSE(waste::chat::parse_json_bounded("\"\xff\"", out, &why));
}

TEST(ChatJson, BlankIsPythonIsspace) {
    EXPECT_TRUE(waste::chat::is_blank(""));
    EXPECT_TRUE(waste::chat::is_blank(" \t\n\r\x0b\x0c\x1c\u3000\u00a0\u2028"));
    EXPECT_FALSE(waste::chat::is_blank(" x "));
    EXPECT_FALSE(waste::chat::is_blank("\u200b"));  // zero-width space is not whitespace to Python
}
