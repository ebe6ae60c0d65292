// render_cli_test.cpp — `waste render MODEL REQUEST.json [--json]` (the CLI
// over waste_chat_render_json): fixture cases from
// ../shared/fixtures/k3-chat/cases.json come out segment for segment
// (exact: a prompt is right to the token or wrong), a refused request exits
// 1 with the reason on stderr, and the readable form names the format.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "test_support.h"

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

namespace {

std::string render_command(const fs::path& request, const std::string& flags) {
    return "'" + waste_test::cli_path().string() + "' render '" + waste_test::fixture("tiny-tok.waste").string() + "' '" + request.string() +
           "' " + flags;
}

Json fixture_case(const std::string& name) {
    const Json cases = Json::parse(waste_test::read_file(waste_test::shared_dir() / "fixtures" / "k3-chat" / "cases.json"));
    for (const Json& c : cases.at("cases"))
        if (c.at("name") == name) return c;
    ADD_FAILURE() << "no case " << name;
    return {};
}

}  // namespace

TEST(RenderCli, FixtureCasesSegmentForSegment) {
    waste_test::TempDir tmp;
    for (const char* name : {"system_user", "tool_results_out_of_order", "image_part", "thinking_effort_low", "no_thinking"}) {
        SCOPED_TRACE(name);
        const Json c = fixture_case(name);
        const fs::path request = tmp / (std::string(name) + ".json");
        waste_test::write_file(request, c.at("request").dump());
        std::string output;
        ASSERT_EQ(waste_test::run_command(render_command(request, "--json"), &output), 0) << output;
        const Json rendered = Json::parse(output);
        EXPECT_EQ(rendered.at("segments"), c.at("segments"));
        EXPECT_FALSE(rendered.at("ids").empty());
    }
}

TEST(RenderCli, RefusedRequestExitsNonZeroWithTheReason) {
    waste_test::TempDir tmp;
    const fs::path request = tmp / "medium.json";
    waste_test::write_file(request, fixture_case("reasoning_effort_medium_refused").at("request").dump());
    std::string output;
    EXPECT_EQ(waste_test::run_command(render_command(request, "--json"), &output), 1) << output;
    EXPECT_NE(output.find("request refused (reasoning_effort)"), std::string::npos) << output;
    EXPECT_NE(output.find("medium"), std::string::npos) << output;
    waste_test::write_file(request, "{not json");
    EXPECT_NE(waste_test::run_command(render_command(request, ""), &output), 0);
    EXPECT_NE(output.find("not valid JSON"), std::string::npos) << output;
}

TEST(RenderCli, ReadableForm) {
    waste_test::TempDir tmp;
    const fs::path request = tmp / "r.json";
    waste_test::write_file(request, R"({"messages": [{"role": "user", "content": "Hi <|open|>"}]})");
    std::string output;
    ASSERT_EQ(waste_test::run_command(render_command(request, "--no-thinking"), &output), 0) << output;
    EXPECT_NE(output.find("format xtml, channel response, thinking off"), std::string::npos) << output;
    EXPECT_NE(output.find("M \"<|open|>\""), std::string::npos) << output;
    EXPECT_NE(output.find("  \"Hi <|open|>\""), std::string::npos) << output;  // content: a plain segment
}
