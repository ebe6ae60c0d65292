// tokenizer_api.cpp — the tokenizer part of the C ABI (include/waste/waste.h)
// over src/text: handles for a tokenizer and a streaming detokenizer.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "api/api_support.h"
#include "api/model_handle.h"
#include "api/tokenizer_handle.h"
#include "text/detokenizer.h"
#include "text/harmony_specials.h"
#include "text/hf_tokenizer_json.h"
#include "text/tokenizer.h"
#include "text/tokenizer_loader.h"

using waste::api::guarded;
using waste::api::to_c_string;


struct waste_detokenizer {
    std::unique_ptr<waste::text::StreamDetokenizer> stream;
};

namespace {

std::optional<waste::text::PatternKind> pattern_argument(const char* pattern, bool required, const char* function) {
    if (!pattern) {
        if (required) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "{}: a pattern name is required ({})", function,
                                  waste::text::pattern_names());
        return std::nullopt;
    }
    auto kind = waste::text::parse_pattern_name(pattern);
    if (!kind)
        waste::fail(WASTE_ERR_INVALID_ARGUMENT, "{}: unknown pattern \"{}\" (known: {})", function, pattern,
                    waste::text::pattern_names());
    return kind;
}

}  // namespace

extern "C" {

waste_status waste_model_tokenizer(const waste_model* model, const char* pattern, waste_tokenizer** out_tokenizer,
                                   waste_error* error) {
    return guarded(error, [&] {
        if (!model || !out_tokenizer)
            waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_model_tokenizer: model and out_tokenizer are required");
        *out_tokenizer = nullptr;
        const auto kind = pattern_argument(pattern, false, "waste_model_tokenizer");
        auto handle = std::make_unique<waste_tokenizer>();
        handle->tokenizer = waste::text::load_container_tokenizer(*model->container, kind);
        handle->grammar_slots = model->grammar_slots;
        *out_tokenizer = handle.release();
    });
}

waste_status waste_tokenizer_open(const char* rank_file_path, const char* pattern, const char* specials_json,
                                  waste_tokenizer** out_tokenizer, waste_error* error) {
    return guarded(error, [&] {
        if (!rank_file_path || !out_tokenizer)
            waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_tokenizer_open: rank_file_path and out_tokenizer are required");
        *out_tokenizer = nullptr;
        const auto kind = pattern_argument(pattern, true, "waste_tokenizer_open");
        std::optional<std::string> specials;
        if (specials_json) specials = std::string(specials_json);
        auto handle = std::make_unique<waste_tokenizer>();
        if (!specials && std::string_view(pattern) == "o200k_harmony")
            handle->tokenizer = std::make_shared<const waste::text::Tokenizer>(
                waste::text::RankTable::parse(
                    waste::text::read_bounded_file(rank_file_path, waste::text::max_rank_file_bytes), rank_file_path),
                waste::text::o200k_harmony_specials(), *kind, -1, 199999);
        else
            handle->tokenizer = waste::text::load_tokenizer_file(rank_file_path, *kind, specials);
        handle->grammar_slots = std::make_shared<waste::api::GrammarSlots>(UINT64_MAX);  // no model, no plan
        *out_tokenizer = handle.release();
    });
}

waste_status waste_tokenizer_open_json(const char* tokenizer_json_path, waste_tokenizer** out_tokenizer,
                                       waste_error* error) {
    return guarded(error, [&] {
        if (!tokenizer_json_path || !out_tokenizer)
            waste::fail(WASTE_ERR_INVALID_ARGUMENT,
                        "waste_tokenizer_open_json: tokenizer_json_path and out_tokenizer are required");
        *out_tokenizer = nullptr;
        auto handle = std::make_unique<waste_tokenizer>();
        handle->tokenizer = waste::text::parse_tokenizer_json(
            waste::text::read_bounded_file(tokenizer_json_path, waste::text::max_tokenizer_json_bytes),
            tokenizer_json_path);
        handle->grammar_slots = std::make_shared<waste::api::GrammarSlots>(UINT64_MAX);  // no model, no plan
        *out_tokenizer = handle.release();
    });
}

void waste_tokenizer_free(waste_tokenizer* tokenizer) { delete tokenizer; }

waste_status waste_tokenizer_tokenize(const waste_tokenizer* tokenizer, const char* text, size_t length,
                                      uint32_t flags, int32_t** out_tokens, size_t* out_count, waste_error* error) {
    return guarded(error, [&] {
        if (!tokenizer || !out_tokens || !out_count || (!text && length > 0))
            waste::fail(WASTE_ERR_INVALID_ARGUMENT,
                        "waste_tokenizer_tokenize: tokenizer, out_tokens, out_count (and text when length > 0) are required");
        *out_tokens = nullptr;
        *out_count = 0;
        if (flags & ~static_cast<uint32_t>(WASTE_TOKENIZE_MARKUP))
            waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_tokenizer_tokenize: unknown flags 0x{:x}", flags);
        const auto ids = tokenizer->tokenizer->encode(std::string_view(text ? text : "", length),
                                                      (flags & WASTE_TOKENIZE_MARKUP) != 0);
        if (ids.empty()) return;
        auto* copy = static_cast<int32_t*>(std::malloc(ids.size() * sizeof(int32_t)));
        if (!copy) throw std::bad_alloc();
        std::memcpy(copy, ids.data(), ids.size() * sizeof(int32_t));
        *out_tokens = copy;
        *out_count = ids.size();
    });
}

void waste_tokens_free(int32_t* tokens) { std::free(tokens); }

waste_status waste_tokenizer_detokenize(const waste_tokenizer* tokenizer, const int32_t* tokens, size_t count,
                                        uint32_t flags, char** out_text, size_t* out_length, waste_error* error) {
    return guarded(error, [&] {
        if (!tokenizer || !out_text || (!tokens && count > 0))
            waste::fail(WASTE_ERR_INVALID_ARGUMENT,
                        "waste_tokenizer_detokenize: tokenizer, out_text (and tokens when count > 0) are required");
        *out_text = nullptr;
        if (out_length) *out_length = 0;
        const std::string text = tokenizer->tokenizer->decode(std::span<const int32_t>(tokens, count),
                                                              (flags & WASTE_TOKENIZE_MARKUP) != 0);
        *out_text = to_c_string(text);
        if (out_length) *out_length = text.size();
    });
}

uint32_t waste_tokenizer_token_count(const waste_tokenizer* tokenizer) {
    return tokenizer ? static_cast<uint32_t>(tokenizer->tokenizer->vocab_size()) : 0;
}

int32_t waste_tokenizer_bos(const waste_tokenizer* tokenizer) { return tokenizer ? tokenizer->tokenizer->bos() : -1; }

int32_t waste_tokenizer_eos(const waste_tokenizer* tokenizer) { return tokenizer ? tokenizer->tokenizer->eos() : -1; }
size_t waste_tokenizer_eos_ids(const waste_tokenizer* tokenizer, int32_t* out_ids, size_t capacity) {
    if (!tokenizer) return 0;
    const auto& ids = tokenizer->tokenizer->eos_ids();
    if (out_ids) std::copy_n(ids.begin(), std::min(capacity, ids.size()), out_ids);
    return ids.size();
}

int32_t waste_tokenizer_special_id(const waste_tokenizer* tokenizer, const char* text) {
    if (!tokenizer || !text) return -1;
    return tokenizer->tokenizer->special_id(text).value_or(-1);
}

const char* waste_tokenizer_pattern(const waste_tokenizer* tokenizer) {
    if (!tokenizer) return "";
    if (tokenizer->tokenizer->hf_pipeline()) return "tokenizer.json";
    return waste::text::pattern_name(tokenizer->tokenizer->pattern());
}

waste_status waste_tokenizer_specials_json(const waste_tokenizer* tokenizer, char** out_json, waste_error* error) {
    return guarded(error, [&] {
        if (!tokenizer || !out_json)
            waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_tokenizer_specials_json: tokenizer and out_json are required");
        nlohmann::json list = nlohmann::json::array();
        for (const auto& special : tokenizer->tokenizer->specials())
            list.push_back({{"id", special.id}, {"text", special.text}});
        *out_json = to_c_string(list.dump());
    });
}

waste_status waste_detokenizer_create(const waste_tokenizer* tokenizer, uint32_t flags,
                                      waste_detokenizer** out_detokenizer, waste_error* error) {
    return guarded(error, [&] {
        if (!tokenizer || !out_detokenizer)
            waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_detokenizer_create: tokenizer and out_detokenizer are required");
        *out_detokenizer = nullptr;
        auto handle = std::make_unique<waste_detokenizer>();
        handle->stream = std::make_unique<waste::text::StreamDetokenizer>(tokenizer->tokenizer,
                                                                         (flags & WASTE_TOKENIZE_MARKUP) != 0);
        *out_detokenizer = handle.release();
    });
}

void waste_detokenizer_free(waste_detokenizer* detokenizer) { delete detokenizer; }

waste_status waste_detokenizer_push(waste_detokenizer* detokenizer, int32_t token, const char** out_bytes,
                                    size_t* out_length, waste_error* error) {
    return guarded(error, [&] {
        if (!detokenizer || !out_bytes || !out_length)
            waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_detokenizer_push: detokenizer, out_bytes and out_length are required");
        *out_bytes = nullptr;
        *out_length = 0;
        const std::string_view bytes = detokenizer->stream->push(token);
        *out_bytes = bytes.data();
        *out_length = bytes.size();
    });
}

waste_status waste_detokenizer_finish(waste_detokenizer* detokenizer, const char** out_bytes, size_t* out_length,
                                      waste_error* error) {
    return guarded(error, [&] {
        if (!detokenizer || !out_bytes || !out_length)
            waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_detokenizer_finish: detokenizer, out_bytes and out_length are required");
        const std::string_view bytes = detokenizer->stream->finish();
        *out_bytes = bytes.data();
        *out_length = bytes.size();
    });
}

}  // extern "C"
