// jinja_templates_test.cpp — every chat template in
// ../shared/data/chat-templates rendered on every conversation of
// tests/data/jinja/conversations.json by WASTE's engine and by Jinja2
// (tools/jinja-reference/render.py, one process for all): byte-identical
// output, or both failing — a raise_exception with the same message.
// Also prints (never asserts) the render time of the 50-message case.
#include <chrono>
#include <cstdio>
#include <fstream>

#include <gtest/gtest.h>

#include "jinja_reference.h"
#include "template/template.h"
#include "test_support.h"

namespace {

namespace fs = std::filesystem;
namespace tmpl = waste::tmpl;
using waste_test::JinjaJob;

const std::vector<std::string>& template_names() {
    static const std::vector<std::string> names = {
        "GLM-4.6", "Kimi-K2-Thinking", "Kimi-K3", "MiniMax-M2", "Qwen-Qwen3-0.6B", "Qwen3-Coder",
        "deepseek-ai-DeepSeek-V3.1", "deepseek-ai-DeepSeek-V3.2", "meta-llama-Llama-3.1-8B-Instruct",
        "mistralai-Mistral-Nemo-Instruct-2407", "moonshotai-Kimi-K2", "openai-gpt-oss-120b"};
    return names;
}

fs::path templates_dir() { return waste_test::shared_dir() / "data" / "chat-templates"; }

const nlohmann::ordered_json& conversations() {
    static const auto corpus = nlohmann::ordered_json::parse(
        waste_test::read_file(waste_test::source_dir() / "tests" / "data" / "jinja" / "conversations.json"));
    return corpus;
}

std::vector<JinjaJob> all_jobs() {
    std::vector<JinjaJob> jobs;
    for (const auto& name : template_names()) {
        const std::string source = waste_test::read_file(templates_dir() / (name + ".jinja"));
        for (const auto& conversation : conversations())
            jobs.push_back({name + "/" + conversation["name"].get<std::string>(), source, conversation["context"]});
    }
    return jobs;
}

TEST(JinjaTemplates, EveryTemplateInTheSharedDirectoryIsTested) {
    std::vector<std::string> found;
    for (const auto& entry : fs::directory_iterator(templates_dir()))
        if (entry.path().extension() == ".jinja") found.push_back(entry.path().stem().string());
    std::sort(found.begin(), found.end());
    auto expected = template_names();
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(found, expected);
}

// One test, so that ctest (a process per test) starts Python once for all.
TEST(JinjaTemplates, EveryTemplateRendersEveryConversationLikeJinja2) {
    const auto jobs = all_jobs();
    const auto references = waste_test::render_with_jinja2(jobs);
    ASSERT_FALSE(references.empty());
    std::map<std::string, std::pair<int, int>> counts;  // template -> rendered alike, failed alike
    for (const auto& job : jobs) {
        const auto it = references.find(job.id);
        ASSERT_NE(it, references.end()) << job.id;
        EXPECT_EQ(waste_test::compare_with_jinja2(job, it->second), "") << job.id;
        auto& count = counts[job.id.substr(0, job.id.find('/'))];
        (it->second.contains("output") ? count.first : count.second)++;
    }
    for (const auto& [name, count] : counts)
        std::printf("%s: %d conversations rendered, %d failed (compared with Jinja2)\n", name.c_str(), count.first, count.second);
}

// Render time of the 50-message conversation (printed for
// docs/bench-log/chat-templates.md, never asserted): the median of 15 renders.
class JinjaRenderTime : public ::testing::TestWithParam<std::string> {};

TEST_P(JinjaRenderTime, FiftyMessages) {
    const std::string source = waste_test::read_file(templates_dir() / (GetParam() + ".jinja"));
    const auto parse_start = std::chrono::steady_clock::now();
    const auto parsed = tmpl::Template::parse(source, GetParam());
    const double parse_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - parse_start).count();
    tmpl::Value context;
    for (const auto& conversation : conversations())
        if (conversation["name"] == "fifty_messages_plain") context = tmpl::from_json(conversation["context"]);
    ASSERT_FALSE(context.is_undefined());
    tmpl::RenderOptions options;
    options.now = static_cast<std::time_t>(waste_test::jinja_reference_now);
    std::vector<double> times;
    size_t bytes = 0;
    for (int run = 0; run < 15; ++run) {
        const auto start = std::chrono::steady_clock::now();
        try {
            bytes = tmpl::render(parsed, context, options).size();
        } catch (const tmpl::TemplateError&) {
            bytes = 0;  // a template that refuses this conversation (checked against Jinja2 above)
        }
        times.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
    }
    std::sort(times.begin(), times.end());
    std::printf("render-time %s: parse %.0f us, render 50 messages median %.0f us (min %.0f), %zu bytes\n", GetParam().c_str(),
                parse_us, times[times.size() / 2], times.front(), bytes);
}

INSTANTIATE_TEST_SUITE_P(SharedTemplates, JinjaRenderTime, ::testing::ValuesIn(template_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                             std::string name = info.param;
                             for (auto& c : name)
                                 if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                             return name;
                         });

}  // namespace
