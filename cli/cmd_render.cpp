// cmd_render.cpp — `waste render MODEL REQUEST.json [--json]`: the prompt an
// OpenAI chat request becomes, through the code the server uses
// (waste_chat_render_json): K3's XTML segments when the container speaks it,
// else its Jinja chat template (or --chat-template FILE), else its chat.json. The model is opened metadata-only: rendering needs
// the tokenizer, never the trunk. A request the server would refuse exits 1
// with the reason on stderr.
#include <cstdio>
#include <iostream>
#include <iterator>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_common.h"
#include "input_file.h"

namespace waste_cli {
namespace {

using Json = nlohmann::ordered_json;

// Why: the server's body cap (k3-chat.md §13.23).
constexpr uint64_t max_request_bytes = uint64_t{64} << 20;

struct RenderArgs {
    std::string model, request;
    std::string chat_template;  // --chat-template FILE ("" = the container's)
    bool json_output = false;
    bool no_thinking = false;
};

std::string read_request(const std::string& path) {
    if (path != "-") return read_input_file(path, max_request_bytes, "the request file");
    std::string text;
    char buffer[65536];
    size_t got = 0;
    while ((got = std::fread(buffer, 1, sizeof buffer, stdin)) > 0) {
        text.append(buffer, got);
        if (text.size() > max_request_bytes)
            throw RuntimeFailure{fmt::format("the request on standard input is over {} bytes", max_request_bytes)};
    }
    return text;
}

void print_readable(const Json& rendered) {
    fmt::print("format {}, channel {}, thinking {}\n", rendered.at("format").get<std::string>(),
               rendered.at("channel").is_null() ? "none" : rendered.at("channel").get<std::string>(),
               rendered.at("thinking").get<bool>() ? "on" : "off");
    for (const auto& segment : rendered.at("segments"))
        fmt::print("{} {}\n", segment.at(1).get<bool>() ? "M" : " ", segment.at(0).dump());
    fmt::print("{} segments (M = markup), {} tokens, stop ids {}\n", rendered.at("segments").size(), rendered.at("ids").size(),
               rendered.at("stop_ids").dump());
    fmt::print("ids {}\n", rendered.at("ids").dump());
    if (rendered.contains("text")) fmt::print("text {}\n", rendered.at("text").dump());
    if (!rendered.at("images").empty()) fmt::print("images {}\n", rendered.at("images").dump());
}

void run_render(const RenderArgs& args) {
    const std::string request = read_request(args.request);
    waste_open_options options;
    waste_open_options_init(&options);
    options.flags = WASTE_OPEN_METADATA_ONLY;
    ModelHandle model = open_model(args.model, options);
    // render-only keys (image_sizes, add_generation_prompt) are honoured here, never by the server
    Json render_options = {{"image_sizes", true}, {"thinking", !args.no_thinking}};
    if (!args.chat_template.empty()) render_options["chat_template"] = read_chat_template_file(args.chat_template);
    const std::string options_text = render_options.dump();
    char* out = nullptr;
    waste_error error{};
    const waste_status status = waste_chat_render_json(model.get(), request.data(), request.size(), options_text.c_str(), &out, &error);
    if (status != WASTE_OK) {
        std::string param;
        if (out) {
            const Json refusal = Json::parse(take_string(out), nullptr, false);
            if (refusal.is_object() && refusal.contains("param") && refusal["param"].is_string())
                param = " (" + refusal["param"].get<std::string>() + ")";
        }
        if (status == WASTE_ERR_INVALID_ARGUMENT) throw RuntimeFailure{fmt::format("request refused{}: {}", param, error.message)};
        fail_with(error, "render " + args.request);
    }
    const std::string text = take_string(out);
    if (args.json_output) {
        fmt::print("{}\n", text);
        return;
    }
    print_readable(Json::parse(text));
}

}  // namespace

void add_render_command(CLI::App& app) {
    auto args = std::make_shared<RenderArgs>();
    CLI::App* command = app.add_subcommand("render", "Print the prompt a chat request becomes (segments and token ids), as the server renders it");
    command->add_option("MODEL", args->model, "Container directory")->required();
    command->add_option("REQUEST", args->request, "An OpenAI chat request body (JSON file, or - for standard input)")->required();
    command->add_flag("--json", args->json_output, "Print {\"segments\": [[text, is_markup], ...], \"ids\": [...], ...}");
    command->add_option("--chat-template", args->chat_template,
                        "A Jinja chat template file to render with instead of the container's (not for K3's XTML)")
        ->default_str("none");
    command->add_flag("--no-thinking", args->no_thinking, "The server's --no-thinking default (a request may still override it)");
    command->callback([args] { run_render(*args); });
}

}  // namespace waste_cli
