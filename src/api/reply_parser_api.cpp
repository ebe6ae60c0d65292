// reply_parser_api.cpp — the C API's reply parser (waste_reply_parser_*):
// generated ids to reasoning, content and tool calls, in the format the
// model's tokenizer (and chat template) speaks, or one the caller names.
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "api/api_support.h"
#include "api/model_handle.h"
#include "api/tokenizer_handle.h"
#include "chat/replies/reply_formats.h"
#include "chat/replies/token_reply_reader.h"
#include "platform/utf8_path.h"
#include "text/chat_template.h"
#include "text/tokenizer_loader.h"

using waste::api::guarded;
using waste::api::to_c_string;
using waste::chat::Json;

struct waste_reply_parser {
    std::shared_ptr<const waste::text::Tokenizer> tokenizer;  // kept alive for the reader
    std::unique_ptr<waste::chat::replies::TokenReplyReader> reader;
    std::string delta_json;
};

namespace {

std::string dump(const Json& value) { return value.dump(-1, ' ', false, Json::error_handler_t::replace); }

std::string delta_json(const waste::chat::ReplyDelta& delta, const waste::chat::replies::FamilyParser& parser) {
    if (delta.empty()) return "{}";
    Json out = Json::object();
    if (!delta.reasoning.empty()) out["reasoning_content"] = delta.reasoning;
    if (!delta.content.empty()) out["content"] = delta.content;
    if (!delta.calls.empty()) {
        Json calls = Json::array();
        for (const size_t position : delta.calls) {
            const auto& call = parser.tool_calls()[position];
            calls.push_back({{"index", position}, {"id", call.id}, {"name", call.name}});
        }
        out["tool_calls"] = std::move(calls);
    }
    return dump(out);
}

std::string checked_channel(const char* channel, const char* function) {
    const std::string name = channel ? channel : "";
    if (!name.empty() && name != "think" && name != "response")
        waste::fail(WASTE_ERR_INVALID_ARGUMENT, "{}: channel \"{}\" is not think, response or NULL", function,
                    name.substr(0, 64));
    return name;
}

// The container's chat_template.jinja, or "" (only a tie-breaker for selection).
std::string container_template(const waste_model& model) {
    const std::filesystem::path path = waste::platform::utf8_path(model.container->directory()) / "chat_template.jinja";
    std::error_code error;
    if (!std::filesystem::exists(path, error)) return {};
    try {
        return waste::text::read_bounded_file(waste::platform::utf8_text(path), waste::text::max_chat_file_bytes);
    } catch (const waste::Error&) {
        return {};
    }
}

}  // namespace

std::string waste::api::model_reply_format(const waste_model& model) {
    const auto format = model_chat_format(model);
    std::lock_guard<std::mutex> lock(model.chat_format_mutex);
    if (model.reply_format.empty()) {
        // A chat.json model without a Jinja template reads every token as
        // content, as before; otherwise the tokenizer tells.
        const std::string jinja = container_template(model);
        model.reply_format = !format->xtml && format->chat_template && jinja.empty()
                                 ? std::string("content")
                                 : waste::chat::replies::select_reply_format(*format->tokenizer, jinja);
    }
    return model.reply_format;
}

extern "C" {

waste_status waste_reply_parser_create(const waste_model* model, const char* channel, waste_reply_parser** out_parser,
                                       waste_error* error) {
    return guarded(error, [&] {
        if (out_parser) *out_parser = nullptr;
        if (!model || !out_parser) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_reply_parser_create: model and out_parser are required");
        const std::string name = checked_channel(channel, "waste_reply_parser_create");
        const auto format = waste::api::model_chat_format(*model);
        const auto* reply_format = waste::chat::replies::find_reply_format(waste::api::model_reply_format(*model));
        auto parser = std::make_unique<waste_reply_parser>();
        parser->tokenizer = format->tokenizer;
        parser->reader = std::make_unique<waste::chat::replies::TokenReplyReader>(format->tokenizer, *reply_format, name);
        *out_parser = parser.release();
    });
}

waste_status waste_reply_parser_create_format(const waste_tokenizer* tokenizer, const char* format, const char* channel,
                                              waste_reply_parser** out_parser, waste_error* error) {
    return guarded(error, [&] {
        if (out_parser) *out_parser = nullptr;
        if (!tokenizer || !format || !out_parser)
            waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_reply_parser_create_format: tokenizer, format and out_parser are required");
        const std::string name = checked_channel(channel, "waste_reply_parser_create_format");
        std::string chosen(format, strnlen(format, 64));
        if (chosen == "auto") chosen = waste::chat::replies::select_reply_format(*tokenizer->tokenizer, "");
        const auto* reply_format = waste::chat::replies::find_reply_format(chosen);
        if (!reply_format) {
            std::string known;
            for (const auto& each : waste::chat::replies::reply_format_names()) known += (known.empty() ? "" : ", ") + each;
            waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_reply_parser_create_format: format \"{}\" is not auto or one of {}",
                        chosen, known);
        }
        auto parser = std::make_unique<waste_reply_parser>();
        parser->tokenizer = tokenizer->tokenizer;
        parser->reader = std::make_unique<waste::chat::replies::TokenReplyReader>(tokenizer->tokenizer, *reply_format, name);
        *out_parser = parser.release();
    });
}

void waste_reply_parser_free(waste_reply_parser* parser) { delete parser; }

waste_status waste_reply_parser_push(waste_reply_parser* parser, int32_t token, const char** out_delta_json, waste_error* error) {
    return guarded(error, [&] {
        if (!parser || !out_delta_json) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_reply_parser_push: parser and out_delta_json are required");
        *out_delta_json = "{}";
        const waste::chat::ReplyDelta delta = parser->reader->push(token);
        parser->delta_json = delta_json(delta, parser->reader->parser());
        *out_delta_json = parser->delta_json.c_str();
    });
}

waste_status waste_reply_parser_finish(waste_reply_parser* parser, const char** out_delta_json, waste_error* error) {
    return guarded(error, [&] {
        if (!parser || !out_delta_json) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_reply_parser_finish: parser and out_delta_json are required");
        *out_delta_json = "{}";
        const waste::chat::ReplyDelta delta = parser->reader->finish();
        parser->delta_json = delta_json(delta, parser->reader->parser());
        *out_delta_json = parser->delta_json.c_str();
    });
}

waste_status waste_reply_parser_message_json(const waste_reply_parser* parser, char** out_json, waste_error* error) {
    return guarded(error, [&] {
        if (out_json) *out_json = nullptr;
        if (!parser || !out_json) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_reply_parser_message_json: parser and out_json are required");
        *out_json = to_c_string(dump(parser->reader->parser().message_json()));
    });
}

}  // extern "C"
