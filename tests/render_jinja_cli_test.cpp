// render_jinja_cli_test.cpp — `waste render` on a container that carries a
// Jinja chat template (the bundled kimi-mini, converted here: its
// tokenizer_config.json's template and [BOS]/[EOS]), and `--chat-template
// FILE` overriding it. Exact: a prompt is right to the byte or wrong.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_support.h"

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

namespace {

class RenderJinjaCli : public ::testing::Test {
protected:
    // The container is only read (a test that changes one copies it first),
    // so under ctest the cases share the one the server tests' fixture
    // converts ($WASTE_KIMI_MINI): converting it again in every case cost
    // about two minutes each under ASan. Run alone, the suite converts its own.
    static void SetUpTestSuite() {
        tmp_ = new waste_test::TempDir();
        const char* shared = std::getenv("WASTE_KIMI_MINI");
        if (shared && *shared) {
            // No quiet fallback to converting: a wrong path would only make
            // the suite slow again, unseen.
            container_ = shared;
            ASSERT_TRUE(fs::exists(container_ / "chat_template.jinja")) << "$WASTE_KIMI_MINI is not a converted kimi-mini: " << shared;
            return;
        }
        container_ = *tmp_ / "kimi-mini.waste";
        std::string output;
        const std::string command = "'" + waste_test::cli_path().string() + "' convert '" +
                                    (waste_test::source_dir() / "models" / "kimi-mini").string() + "' '" + container_.string() +
                                    "' --json";
        ASSERT_EQ(waste_test::run_command(command, &output), 0) << output;
    }
    static void TearDownTestSuite() {
        delete tmp_;
        tmp_ = nullptr;
    }
    static fs::path container() { return container_; }

    // Exit status; `output` holds stdout and stderr.
    int render(const std::string& request, const std::string& flags, std::string& output) {
        const fs::path file = *tmp_ / "request.json";
        waste_test::write_file(file, request);
        return waste_test::run_command(
            "'" + waste_test::cli_path().string() + "' render '" + container().string() + "' '" + file.string() + "' " + flags, &output);
    }

    static waste_test::TempDir* tmp_;
    static fs::path container_;
};

waste_test::TempDir* RenderJinjaCli::tmp_ = nullptr;
fs::path RenderJinjaCli::container_;

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

// `waste chat` with kimi-mini's own template (the container's, or the same
// file by --chat-template) answers as its chat.json path does (a copy of
// the container without the template; greedy, the same prompt ids: exact),
// and a second turn renders the whole conversation again.
TEST_F(RenderJinjaCli, ChatThroughTheTemplateAnswersAsChatJsonDoes) {
    const fs::path file = *tmp_ / "kimi-mini.jinja";
    waste_test::write_file(file, waste_test::read_file(container() / "chat_template.jinja"));
    const fs::path chat_json_only = *tmp_ / "kimi-mini-chat-json.waste";
    fs::copy(container(), chat_json_only, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
    fs::remove(chat_json_only / "chat_template.jinja");
    const std::string flags = "' -q -n 8 --ignore-eos --temp 0";
    const std::string chat = "'" + waste_test::cli_path().string() + "' chat '" + container().string() + flags;
    std::string by_chat_json, by_container, by_file;
    ASSERT_EQ(waste_test::run_command("printf 'hello there\\n' | '" + waste_test::cli_path().string() + "' chat '" +
                                          chat_json_only.string() + flags, &by_chat_json), 0)
        << by_chat_json;
    ASSERT_EQ(waste_test::run_command("printf 'hello there\\n' | " + chat, &by_container), 0) << by_container;
    ASSERT_EQ(waste_test::run_command("printf 'hello there\\n' | " + chat + " --chat-template '" + file.string() + "'", &by_file), 0)
        << by_file;
    EXPECT_FALSE(by_chat_json.empty());
    EXPECT_EQ(by_container, by_chat_json);
    EXPECT_EQ(by_file, by_chat_json);
    std::string two_turns;
    ASSERT_EQ(waste_test::run_command("printf 'hello\\nand then?\\n' | " + chat, &two_turns), 0) << two_turns;
    EXPECT_EQ(two_turns.find("error"), std::string::npos) << two_turns;
    const fs::path raising = *tmp_ / "raising-chat.jinja";
    waste_test::write_file(raising, "{{ raise_exception('no chats today') }}");
    std::string refused;
    EXPECT_NE(waste_test::run_command("printf 'hi\\n' | " + chat + " --chat-template '" + raising.string() + "'", &refused), 0);
    EXPECT_NE(refused.find("no chats today"), std::string::npos) << refused;
}

// A container's template wins over its chat.json in `waste chat`, as in
// `waste serve` and `waste render`: one that refuses every conversation
// makes the chat refuse.
TEST_F(RenderJinjaCli, ChatUsesTheContainersTemplateBesideItsChatJson) {
    const fs::path refusing = *tmp_ / "kimi-mini-refusing.waste";
    fs::copy(container(), refusing, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
    waste_test::write_file(refusing / "chat_template.jinja", "{{ raise_exception('the container template was used') }}");
    std::string output;
    EXPECT_NE(waste_test::run_command("printf 'hi\\n' | '" + waste_test::cli_path().string() + "' chat '" + refusing.string() + "' -q -n 4",
                                      &output),
              0);
    EXPECT_NE(output.find("the container template was used"), std::string::npos) << output;
}

// /save and /load through a Jinja template: the state and, beside it, the
// messages and the ids held; a loaded conversation continues exactly as
// the saved one did, extending the session (it evaluates fewer tokens than
// it holds) instead of starting over.
TEST_F(RenderJinjaCli, JinjaChatSavesAndLoadsItsConversation) {
    const fs::path state = *tmp_ / "jinja-chat.wdas";
    const std::string chat = "'" + waste_test::cli_path().string() + "' chat '" + container().string() + "' -q -n 8 --ignore-eos --temp 0";
    std::string saved, loaded;
    ASSERT_EQ(waste_test::run_command("printf 'hello there\\n/save " + state.string() + "\\nand then?\\n' | " + chat, &saved), 0) << saved;
    ASSERT_NE(saved.find("[saved"), std::string::npos) << saved;
    ASSERT_TRUE(fs::exists(state.string() + ".messages.json"));
    const Json messages = Json::parse(waste_test::read_file(state.string() + ".messages.json"));
    ASSERT_EQ(messages.at("messages").size(), 2u);
    EXPECT_EQ(messages["messages"][0], Json::parse(R"({"role": "user", "content": "hello there"})"));
    ASSERT_EQ(waste_test::run_command("printf '/load " + state.string() + "\\nand then?\\n/stats\\n' | " + chat, &loaded), 0) << loaded;
    ASSERT_NE(loaded.find("[loaded " + std::to_string(messages["held"].size()) + " tokens"), std::string::npos) << loaded;
    // The second answer: the last line of `saved`, the line after [loaded ...] in `loaded`.
    const std::string second_saved = saved.substr(saved.rfind('\n', saved.size() - 2) + 1);
    const size_t after_load = loaded.find('\n') + 1;
    EXPECT_EQ(loaded.substr(after_load, loaded.find('\n', after_load) + 1 - after_load), second_saved);
    unsigned held = 0, evaluated = 0;
    ASSERT_EQ(std::sscanf(loaded.c_str() + loaded.find("\n[") + 1, "[%u of %*u context tokens held | %u tokens evaluated", &held, &evaluated), 2)
        << loaded;
    EXPECT_LT(evaluated, held - messages["held"].size() + 1) << loaded;
}

// A messages file that is not what /save wrote: refused by name, the
// conversation reset, the chat going on.
TEST_F(RenderJinjaCli, JinjaChatRefusesABadMessagesFile) {
    const fs::path state = *tmp_ / "hostile.wdas";
    const std::string chat = "'" + waste_test::cli_path().string() + "' chat '" + container().string() + "' -q -n 4 --ignore-eos --temp 0";
    std::string output;
    ASSERT_EQ(waste_test::run_command("printf 'hello\\n/save " + state.string() + "\\n' | " + chat, &output), 0) << output;
    const std::string good = waste_test::read_file(state.string() + ".messages.json");
    const Json parsed = Json::parse(good);
    Json wrong_count = parsed;
    wrong_count["held"].push_back(1);
    Json bad_id = parsed;
    bad_id["held"][0] = 99999999;
    Json bad_role = parsed;
    bad_role["messages"][0]["role"] = "tool";
    for (const auto& [contents, expected] : std::vector<std::pair<std::string, std::string>>{
             {"{not json", "not a saved conversation"},
             {std::string(100, '[') + std::string(100, ']'), "nests deeper"},
             {wrong_count.dump(), "not saved together"},
             {bad_id.dump(), "token id 99999999"},
             {bad_role.dump(), "message 0 is not a role"},
             {R"({"messages": [], "held": "x"})", "not a saved conversation"}}) {
        waste_test::write_file(state.string() + ".messages.json", contents);
        ASSERT_EQ(waste_test::run_command("printf '/load " + state.string() + "\\n/stats\\nhi\\n' | " + chat, &output), 0) << output;
        EXPECT_NE(output.find("cannot load"), std::string::npos) << contents << "\n" << output;
        EXPECT_NE(output.find(expected), std::string::npos) << contents << "\n" << output;
        EXPECT_NE(output.find("[0 of "), std::string::npos) << output;
    }
    fs::remove(state.string() + ".messages.json");
    ASSERT_EQ(waste_test::run_command("printf '/load " + state.string() + "\\n' | " + chat, &output), 0) << output;
    EXPECT_NE(output.find("cannot load"), std::string::npos) << output;
}

}  // namespace
