// chat_request_api.cpp — chat requests and replies for the C API
// (waste_chat_render_json; the reply parser is reply_parser_api.cpp): the model's chat format,
// read once and cached on the model, over src/chat.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "api/api_support.h"
#include "api/model_handle.h"
#include "chat/chat_json_render.h"
#include "chat/chat_request.h"
#include "chat/image_source.h"
#include "chat/jinja_render.h"
#include "chat/replies/reply_formats.h"
#include "chat/segments.h"
#include "chat/xtml_render.h"
#include "platform/utf8_path.h"
#include "text/tokenizer_loader.h"

using waste::api::guarded;
using waste::api::to_c_string;
using waste::chat::Json;

namespace {

// Why: the server's body cap (k3-chat.md §13.23); a request is held whole, parsed once.
constexpr size_t max_request_bytes = size_t{64} << 20;
// Why: the options carry at most a chat template override (a real one is
// under 20 KiB; text/chat_template.h bounds template files at 1 MiB).
constexpr size_t max_options_bytes = (size_t{1} << 20) + 4096;

// The bos_token/eos_token strings of the converter's chat_tokens.json
// (docs/FORMAT.md); "" for one the checkpoint did not name.
void read_chat_tokens(const std::filesystem::path& path, waste::chat::JinjaFormat& jinja) {
    std::error_code exists_error;
    if (!std::filesystem::exists(path, exists_error)) return;
    const std::string name = waste::platform::utf8_text(path);
    Json tokens;
    if (!waste::chat::parse_json_bounded(waste::text::read_bounded_file(name, waste::text::max_chat_file_bytes), tokens) ||
        !tokens.is_object())
        waste::fail(WASTE_ERR_FORMAT, "{}: not a JSON object", name);
    for (const char* key : {"bos_token", "eos_token"}) {
        const auto it = tokens.find(key);
        if (it == tokens.end() || it->is_null()) continue;
        if (!it->is_string()) waste::fail(WASTE_ERR_FORMAT, "{}: {} is not a string", name, key);
        (std::string(key) == "bos_token" ? jinja.bos_token : jinja.eos_token) = it->get<std::string>();
    }
}

waste::chat::JinjaFormat parse_jinja(std::string source, std::string name) {
    waste::chat::JinjaFormat jinja;
    jinja.chat_template = waste::tmpl::Template::parse(source, std::move(name));
    jinja.source = std::move(source);
    return jinja;
}

std::shared_ptr<const waste::chat::ChatFormat> chat_format(const waste_model& model) {
    std::lock_guard<std::mutex> lock(model.chat_format_mutex);
    if (model.chat_format) return model.chat_format;
    auto format = std::make_shared<waste::chat::ChatFormat>();
    format->tokenizer = waste::text::load_container_tokenizer(*model.container, std::nullopt);
    format->xtml = waste::chat::speaks_xtml(*format->tokenizer, format->marker_ids);
    const std::filesystem::path directory = waste::platform::utf8_path(model.container->directory());
    const std::filesystem::path jinja_path = directory / "chat_template.jinja";
    std::error_code jinja_exists_error;
    if (!format->xtml && std::filesystem::exists(jinja_path, jinja_exists_error)) {
        try {
            const std::string jinja_name = waste::platform::utf8_text(jinja_path);
            format->jinja = parse_jinja(waste::text::read_bounded_file(jinja_name, waste::text::max_chat_file_bytes), jinja_name);
            read_chat_tokens(directory / "chat_tokens.json", *format->jinja);
        } catch (const waste::Error& e) {
            format->jinja.reset();
            format->jinja_error = e.what();  // chat.json, if any, still serves; the error says why not the template
        }
    }
    const std::filesystem::path path = directory / "chat.json";
    std::error_code exists_error;
    if (std::filesystem::exists(path, exists_error)) {
        try {
            const std::string name = waste::platform::utf8_text(path);
            format->chat_template =
                waste::text::ChatTemplate::parse(waste::text::read_bounded_file(name, waste::text::max_chat_file_bytes), name);
        } catch (const waste::Error& e) {
            format->no_template_reason = e.what();
        }
    } else {
        format->no_template_reason = model.container->directory() + " has no chat.json and its tokenizer does not speak XTML";
    }
    model.chat_format = format;
    return format;
}

Json error_object(const std::string& message, const std::string& param, const std::string& code) {
    return Json{{"message", message},
                {"type", "invalid_request_error"},
                {"param", param.empty() ? Json(nullptr) : Json(param)},
                {"code", code.empty() ? Json(nullptr) : Json(code)}};
}

std::string dump(const Json& value) { return value.dump(-1, ' ', false, Json::error_handler_t::replace); }

struct ApiOptions {
    waste::chat::RenderOptions render;
    std::optional<std::string> chat_template;  // an override of the container's (--chat-template FILE)
};

ApiOptions read_options(const char* options_json) {
    ApiOptions api;
    waste::chat::RenderOptions& options = api.render;
    if (!options_json) return api;
    const size_t length = strnlen(options_json, max_options_bytes + 1);
    if (length > max_options_bytes)
        waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_chat_render_json: options_json is longer than {} bytes", max_options_bytes);
    Json parsed;
    std::string why;
    if (!waste::chat::parse_json_bounded(std::string_view(options_json, length), parsed, &why) || !parsed.is_object())
        waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_chat_render_json: options_json is not a JSON object{}{}", why.empty() ? "" : ": ", why);
    for (auto it = parsed.begin(); it != parsed.end(); ++it) {
        if (it.key() == "image_sizes" && it->is_array()) {  // sizes the caller measured, one per image part
            std::vector<std::pair<uint64_t, uint64_t>> sizes;
            for (const Json& size : *it) {
                if (!size.is_array() || size.size() != 2 || !size[0].is_number_unsigned() || !size[1].is_number_unsigned() ||
                    size[0].get<uint64_t>() < 1 || size[1].get<uint64_t>() < 1 || size[0].get<uint64_t>() > waste::chat::max_image_side ||
                    size[1].get<uint64_t>() > waste::chat::max_image_side)
                    waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_chat_render_json: option image_sizes must hold [width, height] pairs of "
                                "1 to {}", waste::chat::max_image_side);
                sizes.emplace_back(size[0].get<uint64_t>(), size[1].get<uint64_t>());
            }
            options.measured_image_sizes = std::move(sizes);
            continue;
        }
        if (it.key() == "chat_template") {
            if (!it->is_string())
                waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_chat_render_json: option chat_template must be the template's text");
            api.chat_template = it->get<std::string>();
            continue;
        }
        if (!it->is_boolean())
            waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_chat_render_json: option \"{}\" must be true or false", it.key());
        if (it.key() == "thinking") options.thinking_default = it->get<bool>();
        else if (it.key() == "image_sizes") options.render_only_keys = it->get<bool>();
        else if (it.key() == "list_images") options.list_images = it->get<bool>();
        else waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_chat_render_json: unknown option \"{}\" (known: thinking, image_sizes, list_images, chat_template)", it.key());
    }
    return api;
}

waste::chat::RenderedPrompt render(const waste::chat::ChatFormat& format, const waste::chat::JinjaFormat* jinja, const Json& body,
                                   const waste::chat::RenderOptions& options) {
    if (jinja) return waste::chat::render_jinja(body, *jinja, *format.tokenizer, {options.render_only_keys, std::nullopt});
    const waste::chat::ChatRequest request = waste::chat::read_chat_request(body, options);
    // The engine has no vision tower: an image can only be rendered for
    // inspection, with render-only sizes standing in for the files (§10).
    if (request.image_parts > 0 && !((options.render_only_keys || options.measured_image_sizes || options.list_images) && format.xtml))
        throw waste::chat::RequestError("this model has no vision tower loaded: images cannot be read", "messages", "vision_disabled");
    if (format.xtml) return waste::chat::render_xtml(request);
    if (!format.chat_template)
        throw waste::chat::RequestError(format.no_template_reason + (format.jinja_error.empty() ? "" : "; " + format.jinja_error) +
                                            ": it cannot render a chat (use /v1/completions)",
                                        "messages", "no_chat_format");
    return waste::chat::render_chat_json(request, *format.chat_template);
}

std::vector<int32_t> stop_ids(const waste::chat::ChatFormat& format) {
    std::vector<int32_t> ids;
    if (format.xtml) {
        ids.push_back(format.marker_ids[3]);  // <|end_of_msg|>
        return ids;
    }
    // What ends an assistant turn in chat.json, as `waste chat` stops: the
    // assistant suffix when it is one token; and the model's EOS.
    if (format.chat_template && format.chat_template->has_role("assistant")) {
        const auto suffix = format.tokenizer->encode(format.chat_template->role("assistant").second, true);
        if (suffix.size() == 1) ids.push_back(suffix[0]);
    }
    for (int32_t eos : format.tokenizer->eos_ids())
        if (std::find(ids.begin(), ids.end(), eos) == ids.end()) ids.push_back(eos);
    return ids;
}

}  // namespace

namespace waste::api {
std::shared_ptr<const chat::ChatFormat> model_chat_format(const waste_model& model) { return chat_format(model); }
}  // namespace waste::api

extern "C" {

waste_status waste_chat_render_json(const waste_model* model, const char* request_json, size_t length, const char* options_json,
                                    char** out_json, waste_error* error) {
    return guarded(error, [&] {
        if (out_json) *out_json = nullptr;
        if (!model || (!request_json && length) || !out_json)
            waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_chat_render_json: model, request_json and out_json are required");
        const ApiOptions api = read_options(options_json);
        const waste::chat::RenderOptions& options = api.render;
        const auto format = chat_format(*model);
        // The Jinja path: an override, else the container's template, unless the model speaks XTML.
        std::optional<waste::chat::JinjaFormat> override_jinja;
        if (api.chat_template && !format->xtml) {
            if (api.chat_template->size() > waste::text::max_chat_file_bytes)
                waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_chat_render_json: option chat_template is longer than {} bytes",
                            waste::text::max_chat_file_bytes);
            override_jinja = parse_jinja(*api.chat_template, "chat_template (override)");
            if (format->jinja) {
                override_jinja->bos_token = format->jinja->bos_token;
                override_jinja->eos_token = format->jinja->eos_token;
            } else {
                read_chat_tokens(waste::platform::utf8_path(model->container->directory()) / "chat_tokens.json", *override_jinja);
            }
        }
        const waste::chat::JinjaFormat* jinja = override_jinja ? &*override_jinja : format->jinja ? &*format->jinja : nullptr;
        try {
            if (length > max_request_bytes)
                throw waste::chat::RequestError(fmt::format("the request is {} bytes, more than {}", length, max_request_bytes), "");
            Json body;
            std::string why;
            if (!waste::chat::parse_json_bounded(std::string_view(request_json ? request_json : "", length), body, &why))
                throw waste::chat::RequestError("the request body is not valid JSON: " + why, "");
            const waste::chat::RenderedPrompt prompt = render(*format, format->xtml ? nullptr : jinja, body, options);
            std::vector<int32_t> ids;
            try {
                ids = waste::chat::encode_segments(*format->tokenizer, prompt.segments);
            } catch (const waste::Error& e) {
                throw waste::chat::RequestError(std::string("the conversation cannot be tokenized: ") + e.what(), "messages");
            }
            Json segments = Json::array();
            for (const auto& segment : prompt.segments) segments.push_back(Json::array({segment.text, segment.markup}));
            Json out = Json::object();
            out["format"] = format->xtml ? "xtml" : jinja ? "jinja" : "chat.json";
            // How the reply reads back, and (Jinja) how the family writes a
            // call: what a server needs to hold a reply to a demanded call.
            const std::string reply_format = waste::api::model_reply_format(*model);
            out["reply_format"] = reply_format;
            if (jinja && !format->xtml)
                if (const auto* family = waste::chat::replies::find_reply_format(reply_format))
                    if (Json syntax = waste::chat::replies::call_syntax_json(*family); !syntax.is_null())
                        out["call_syntax"] = std::move(syntax);
            std::string text = prompt.text;
            if (!jinja || format->xtml)
                for (const auto& segment : prompt.segments) text += segment.text;
            out["text"] = std::move(text);
            out["segments"] = std::move(segments);
            out["ids"] = ids;
            out["channel"] = prompt.channel.empty() ? Json(nullptr) : Json(prompt.channel);
            out["thinking"] = prompt.thinking;
            out["stop_ids"] = jinja && !format->xtml ? waste::chat::jinja_stop_ids(*jinja, *format->tokenizer) : stop_ids(*format);
            out["images"] = prompt.images;
            *out_json = to_c_string(dump(out));
        } catch (const waste::chat::RequestError& refused) {
            *out_json = to_c_string(dump(error_object(refused.what(), refused.param(), refused.code())));
            waste::fail(WASTE_ERR_INVALID_ARGUMENT, "{}", refused.what());
        }
    });
}

namespace {

// waste_image_source_read and _in_dir: `local` says which files may be read.
void read_image_source_c(const char* ref, size_t length, const waste::chat::LocalImages& local, char** out_bytes,
                         size_t* out_size, char** out_error_json) {
    try {
        const std::string bytes = waste::chat::read_image_source(std::string_view(ref ? ref : "", length), local);
        *out_bytes = to_c_string(bytes);
        *out_size = bytes.size();
    } catch (const waste::chat::RequestError& refused) {
        if (out_error_json) *out_error_json = to_c_string(dump(error_object(refused.what(), refused.param(), refused.code())));
        waste::fail(WASTE_ERR_INVALID_ARGUMENT, "{}", refused.what());
    }
}

void clear_image_outputs(const char* function, const char* ref, size_t length, char** out_bytes, size_t* out_size,
                         char** out_error_json) {
    if (out_bytes) *out_bytes = nullptr;
    if (out_size) *out_size = 0;
    if (out_error_json) *out_error_json = nullptr;
    if ((!ref && length) || !out_bytes || !out_size)
        waste::fail(WASTE_ERR_INVALID_ARGUMENT, "{}: ref, out_bytes and out_size are required", function);
}

}  // namespace

waste_status waste_image_source_read(const char* ref, size_t length, uint32_t flags, char** out_bytes, size_t* out_size,
                                     char** out_error_json, waste_error* error) {
    return guarded(error, [&] {
        clear_image_outputs("waste_image_source_read", ref, length, out_bytes, out_size, out_error_json);
        if (flags & ~WASTE_IMAGE_LOCAL_FILES) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_image_source_read: unknown flags 0x{:x}", flags);
        read_image_source_c(ref, length, {.any = (flags & WASTE_IMAGE_LOCAL_FILES) != 0, .dir = ""},
                            out_bytes, out_size, out_error_json);
    });
}

waste_status waste_image_source_read_in_dir(const char* ref, size_t length, const char* image_dir, uint64_t max_file_bytes,
                                            char** out_bytes, size_t* out_size, char** out_error_json, waste_error* error) {
    return guarded(error, [&] {
        clear_image_outputs("waste_image_source_read_in_dir", ref, length, out_bytes, out_size, out_error_json);
        const std::string dir = image_dir ? waste::chat::resolve_image_dir(image_dir) : "";
        waste::chat::LocalImages local{.any = false, .dir = dir};
        if (max_file_bytes) local.max_file_bytes = max_file_bytes;
        read_image_source_c(ref, length, local, out_bytes, out_size, out_error_json);
    });
}

}  // extern "C"
