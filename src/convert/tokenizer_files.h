// tokenizer_files.h — the container's tokenizer.model, specials.json,
// chat.json and chat_template.jinja from a release's tokenizer files.
//
// tiktoken.model is copied verbatim (it is already the tiktoken rank file of
// container-v0 §6) after a check that every line is "base64 rank". Specials
// follow Kimi's tokenizer: every id from the number of ranks up to
// vocab_size - 1 is special, named by tokenizer_config.json's
// added_tokens_decoder or, when unnamed, <|reserved_token_ID|> (models.md §9).
// chat.json is the release's own when it ships one; otherwise it is derived
// when the specials show a markup the project knows (K3's XTML, or the
// <|im_*|> markup of Kimi-Linear and K2), and absent when not.
//
// A release without tiktoken.model (Qwen3, DeepSeek-V3, gpt-oss, GLM: the
// Hugging Face form) has its tokenizer.json copied verbatim instead, after
// the checks the engine's reader makes (text/hf_tokenizer_json.h: a file it
// could not tokenise exactly is refused here, naming the component) and a
// check that every id is below vocab_size; its added tokens are the
// specials, so no specials.json is written.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace waste::convert {

struct TokenizerFiles {
    std::optional<std::string> rank_file;      // tokenizer.model
    std::optional<std::string> tokenizer_json;  // tokenizer.json (only without a rank file)
    std::optional<std::string> specials_json;  // specials.json
    std::optional<std::string> chat_json;      // chat.json
    std::optional<std::string> chat_template;  // chat_template.jinja
    // chat_tokens.json: tokenizer_config.json's bos_token and eos_token, the
    // strings a chat template sees as bos_token/eos_token (only with a template)
    std::optional<std::string> chat_tokens_json;
    int64_t ranks = 0;
    std::string chat_source;                   // "release", "xtml", "im", or "none"
};

// Reads and checks them from source_dir; vocab is config.vocab_size. Throws
// WASTE_ERR_FORMAT naming the file and line for a malformed one.
TokenizerFiles read_tokenizer_files(const std::string& source_dir, int64_t vocab);

}  // namespace waste::convert
