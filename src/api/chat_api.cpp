// chat_api.cpp — chat templates (chat.json) for the C API.
#include <filesystem>
#include <memory>
#include <vector>

#include "api/api_support.h"
#include "api/model_handle.h"
#include "api/tokenizer_handle.h"
#include "platform/utf8_path.h"
#include "text/chat_template.h"
#include "text/tokenizer_loader.h"

using waste::api::guarded;

struct waste_chat_template {
    waste::text::ChatTemplate chat;
};

namespace {

constexpr size_t max_chat_messages = 1u << 20;

}  // namespace

extern "C" {

waste_status waste_model_chat_template(const waste_model* model, waste_chat_template** out_template, waste_error* error) {
    return guarded(error, [&] {
        if (!model || !out_template) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_model_chat_template: model and out_template are required");
        *out_template = nullptr;
        const std::filesystem::path path = waste::platform::utf8_path(model->container->directory()) / "chat.json";
        std::error_code exists_error;
        if (!std::filesystem::exists(path, exists_error))
            waste::fail(WASTE_ERR_UNSUPPORTED, "{} has no chat.json (no chat template): use --raw, or add one (container-v0.md §6)",
                        model->container->directory());
        const std::string name = waste::platform::utf8_text(path);
        const std::string text = waste::text::read_bounded_file(name, waste::text::max_chat_file_bytes);
        *out_template = new waste_chat_template{waste::text::ChatTemplate::parse(text, name)};
    });
}

waste_status waste_chat_template_parse(const char* json, size_t length, const char* source, waste_chat_template** out_template,
                                       waste_error* error) {
    return guarded(error, [&] {
        if ((!json && length) || !out_template) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_chat_template_parse: json and out_template are required");
        *out_template = nullptr;
        *out_template = new waste_chat_template{
            waste::text::ChatTemplate::parse(std::string_view(json ? json : "", length), source ? source : "chat.json")};
    });
}

void waste_chat_template_free(waste_chat_template* chat_template) { delete chat_template; }

waste_status waste_chat_template_role(const waste_chat_template* chat_template, const char* role, const char** out_prefix,
                                      const char** out_suffix, waste_error* error) {
    return guarded(error, [&] {
        if (!chat_template || !role) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_chat_template_role: template and role are required");
        const auto& markup = chat_template->chat.role(role);
        if (out_prefix) *out_prefix = markup.first.c_str();
        if (out_suffix) *out_suffix = markup.second.c_str();
    });
}

const char* waste_chat_template_open(const waste_chat_template* chat_template) {
    return chat_template ? chat_template->chat.open().c_str() : "";
}

waste_status waste_chat_tokenize(const waste_chat_template* chat_template, const waste_tokenizer* tokenizer,
                                 const waste_chat_message* messages, size_t count, int open_answer, int32_t** out_tokens,
                                 size_t* out_count, waste_error* error) {
    return guarded(error, [&] {
        if (!chat_template || !tokenizer || (!messages && count) || !out_tokens || !out_count || count > max_chat_messages)
            waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_chat_tokenize: template, tokenizer, messages ({} at most {}) and outputs are required",
                        count, max_chat_messages);
        *out_tokens = nullptr;
        *out_count = 0;
        std::vector<int32_t> ids;
        for (size_t i = 0; i < count; ++i) {
            const waste_chat_message& m = messages[i];
            if (!m.role || (!m.content && m.content_length))
                waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_chat_tokenize: message {} needs a role and content", i);
            chat_template->chat.encode_turn(*tokenizer->tokenizer, m.role, std::string_view(m.content ? m.content : "", m.content_length), ids);
        }
        if (open_answer) chat_template->chat.encode_open(*tokenizer->tokenizer, ids);
        if (ids.empty()) return;
        int32_t* copy = static_cast<int32_t*>(std::malloc(ids.size() * sizeof(int32_t)));
        if (!copy) throw std::bad_alloc();
        std::memcpy(copy, ids.data(), ids.size() * sizeof(int32_t));
        *out_tokens = copy;
        *out_count = ids.size();
    });
}

}  // extern "C"
