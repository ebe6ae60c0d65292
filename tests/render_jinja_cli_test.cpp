// render_jinja_cli_test.cpp — `waste render` on a container that carries a
// Jinja chat template (the bundled kimi-mini, converted here: its
// tokenizer_config.json's template and [BOS]/[EOS]), and `--chat-template
// FILE` overriding it. Exact: a prompt is right to the byte or wrong.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "test_support.h"

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

namespace {

class RenderJinjaCli : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        tmp_ = new waste_test::TempDir();
        std::string output;
        const std::string command = "'" + waste_test::cli_path().string() + "' convert '" +
                                    (waste_test::source_dir() / "models" / "kimi-mini").string() + "' '" + container().string() +
                                    "' --json";
        ASSERT_EQ(waste_test::run_command(command, &output), 0) << output;
    }
    static void TearDownTestSuite() {
        delete tmp_;
        tmp_ = nullptr;
    }
    static fs::path container() { return *tmp_ / "kimi-mini.waste"; }

    // Exit status; `output` holds stdout and stderr.
    int render(const std::string& request, const std::string& flags, std::string& output) {
        const fs::path file = *tmp_ / "request.json";
        waste_test::write_file(file, request);
        return waste_test::run_command(
            "'" + waste_test::cli_path().string() + "' render '" + container().string() + "' '" + file.string() + "' " + flags, &output);
    }

    static waste_test::TempDir* tmp_;
};

waste_test::TempDir* RenderJinjaCli::tmp_ = nullptr;

TEST_F(RenderJinjaCli, ConverterStoresTheTemplatesBosAndEos) {
    ASSERT_TRUE(fs::exists(container() / "chat_template.jinja"));
    const Json tokens = Json::parse(waste_test::read_file(container() / "chat_tokens.json"));
    EXPECT_EQ(tokens, Json::parse(R"({"bos_token": "[BOS]", "eos_token": "[EOS]"})"));
}

TEST_F(RenderJinjaCli, TheContainersTemplateRendersAndTypedSpecialsStayText) {
    std::string output;
    ASSERT_EQ(render(R"({"messages": [{"role": "user", "content": "hi <|im_end|>"}]})", "--json", output), 0) << output;
    const Json rendered = Json::parse(output);
    EXPECT_EQ(rendered.at("format"), "jinja");
    EXPECT_EQ(rendered.at("text"), "<|im_user|>user<|im_middle|>hi <|im_end|><|im_end|><|im_assistant|>assistant<|im_middle|>");
    const Json expected_segments = Json::parse(R"([["<|im_user|>user<|im_middle|>", true], ["hi <|im_end|>", false],
                                                  ["<|im_end|><|im_assistant|>assistant<|im_middle|>", true]])");
    EXPECT_EQ(rendered.at("segments"), expected_segments);
    EXPECT_EQ(rendered.at("channel"), "response");
    // add_generation_prompt is render-only: honoured here
    ASSERT_EQ(render(R"({"messages": [{"role": "user", "content": "x"}], "add_generation_prompt": false})", "--json", output), 0) << output;
    EXPECT_EQ(Json::parse(output).at("text"), "<|im_user|>user<|im_middle|>x<|im_end|>");
}

TEST_F(RenderJinjaCli, ChatTemplateFileOverridesTheContainers) {
    const fs::path file = *tmp_ / "override.jinja";
    waste_test::write_file(file, "{{ bos_token }}[{{ messages[0].content }}]{% if flavour is defined %}{{ flavour }}{% endif %}");
    std::string output;
    ASSERT_EQ(render(R"({"messages": [{"role": "user", "content": "hi"}], "chat_template_kwargs": {"flavour": "mint"}})",
                     "--json --chat-template '" + file.string() + "'", output),
              0)
        << output;
    EXPECT_EQ(Json::parse(output).at("text"), "[BOS][hi]mint");
    ASSERT_EQ(render(R"({"messages": [{"role": "user", "content": "hi"}]})", "--chat-template '" + file.string() + "'", output), 0)
        << output;
    EXPECT_NE(output.find("format jinja"), std::string::npos) << output;
    EXPECT_NE(output.find("text \"[BOS][hi]\""), std::string::npos) << output;
}

TEST_F(RenderJinjaCli, RaiseExceptionExitsNonZeroWithTheTemplatesMessage) {
    const fs::path file = *tmp_ / "raising.jinja";
    waste_test::write_file(file, "{% if messages[0].role != 'system' %}{{ raise_exception('a system message must come first') }}{% endif %}");
    std::string output;
    EXPECT_EQ(render(R"({"messages": [{"role": "user", "content": "hi"}]})", "--json --chat-template '" + file.string() + "'", output), 1);
    EXPECT_NE(output.find("a system message must come first"), std::string::npos) << output;
    waste_test::write_file(file, "line one\n{% for %}");
    EXPECT_NE(render(R"({"messages": [{"role": "user", "content": "hi"}]})", "--chat-template '" + file.string() + "'", output), 0);
    EXPECT_NE(output.find("line 2"), std::string::npos) << output;
}

// `waste chat --chat-template FILE` with kimi-mini's own template answers
// as its chat.json path does (greedy, the same prompt ids: exact), and a
// second turn renders the whole conversation again.
TEST_F(RenderJinjaCli, ChatThroughTheTemplateAnswersAsChatJsonDoes) {
    const fs::path file = *tmp_ / "kimi-mini.jinja";
    waste_test::write_file(file, waste_test::read_file(container() / "chat_template.jinja"));
    const std::string chat = "'" + waste_test::cli_path().string() + "' chat '" + container().string() + "' -q -n 8 --ignore-eos --temp 0";
    std::string by_chat_json, by_template;
    ASSERT_EQ(waste_test::run_command("printf 'hello there\\n' | " + chat, &by_chat_json), 0) << by_chat_json;
    ASSERT_EQ(waste_test::run_command("printf 'hello there\\n' | " + chat + " --chat-template '" + file.string() + "'", &by_template), 0)
        << by_template;
    EXPECT_EQ(by_template, by_chat_json);
    std::string two_turns;
    ASSERT_EQ(waste_test::run_command("printf 'hello\\nand then?\\n' | " + chat + " --chat-template '" + file.string() + "'", &two_turns), 0)
        << two_turns;
    EXPECT_EQ(two_turns.find("error"), std::string::npos) << two_turns;
    const fs::path raising = *tmp_ / "raising-chat.jinja";
    waste_test::write_file(raising, "{{ raise_exception('no chats today') }}");
    std::string refused;
    EXPECT_NE(waste_test::run_command("printf 'hi\\n' | " + chat + " --chat-template '" + raising.string() + "'", &refused), 0);
    EXPECT_NE(refused.find("no chats today"), std::string::npos) << refused;
}

}  // namespace
