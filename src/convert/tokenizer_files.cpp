#include "convert/tokenizer_files.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "platform/error.h"
#include "platform/utf8_path.h"
#include "text/hf_tokenizer_json.h"

namespace waste::convert {
namespace {

namespace fs = std::filesystem;
constexpr uint64_t max_tokenizer_file_bytes = uint64_t{64} << 20;  // Kimi's rank file is ~2.8 MB

std::optional<std::string> read_optional(const fs::path& path) {
    std::error_code error;
    if (!fs::is_regular_file(path, error)) return std::nullopt;
    const uint64_t size = fs::file_size(path, error);
    if (error || size > max_tokenizer_file_bytes)
        fail(WASTE_ERR_FORMAT, "{}: {} bytes, more than a tokenizer file may hold ({})", platform::utf8_text(path), size,
             max_tokenizer_file_bytes);
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    if (!in && !in.eof()) fail(WASTE_ERR_IO, "cannot read {}", platform::utf8_text(path));
    return text.str();
}

bool is_base64(std::string_view text) {
    if (text.empty() || text.size() % 4 != 0) return false;
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        const bool alnum = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/';
        if (!alnum && !(c == '=' && i + 2 >= text.size())) return false;
    }
    return true;
}

// Returns the number of ranks (max rank + 1).
int64_t check_rank_file(const std::string& text, const std::string& what) {
    int64_t max_rank = -1;
    size_t line_number = 0, begin = 0;
    while (begin < text.size()) {
        size_t end = text.find('\n', begin);
        if (end == std::string::npos) end = text.size();
        ++line_number;
        std::string_view line(text.data() + begin, end - begin);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (!line.empty()) {
            const size_t space = line.find(' ');
            int64_t rank = -1;
            if (space != std::string_view::npos && is_base64(line.substr(0, space))) {
                const std::string digits(line.substr(space + 1));
                if (!digits.empty() && digits.size() <= 9 && digits.find_first_not_of("0123456789") == std::string::npos)
                    rank = std::stoll(digits);
            }
            if (rank < 0) fail(WASTE_ERR_FORMAT, "{}: line {} is not \"base64 rank\"", what, line_number);
            max_rank = std::max(max_rank, rank);
        }
        begin = end + 1;
    }
    if (max_rank < 0) fail(WASTE_ERR_FORMAT, "{}: no ranks", what);
    return max_rank + 1;
}

bool has_all(const std::map<int64_t, std::string>& specials, std::initializer_list<const char*> texts) {
    for (const char* text : texts) {
        bool found = false;
        for (const auto& [id, name] : specials) found = found || name == text;
        if (!found) return false;
    }
    return true;
}

nlohmann::json read_tokenizer_config(const fs::path& dir) {
    const auto text = read_optional(dir / "tokenizer_config.json");
    if (!text) return nlohmann::json::object();
    nlohmann::json config = nlohmann::json::parse(*text, nullptr, false);
    if (config.is_discarded() || !config.is_object())
        fail(WASTE_ERR_FORMAT, "{}: not a JSON object", platform::utf8_text(dir / "tokenizer_config.json"));
    return config;
}

// A special-token entry of tokenizer_config.json: a string, or transformers'
// AddedToken form {"content": ...}; null when absent.
nlohmann::ordered_json token_text(const nlohmann::json& config, const char* key) {
    if (!config.contains(key) || config[key].is_null()) return nullptr;
    const nlohmann::json& value = config[key];
    if (value.is_string()) return value.get<std::string>();
    if (value.is_object() && value.contains("content") && value["content"].is_string()) return value["content"].get<std::string>();
    fail(WASTE_ERR_FORMAT, "tokenizer_config.json: {} is neither a string nor {{\"content\": text}}", key);
}

// The release's chat_template.jinja, or tokenizer_config.json's
// chat_template; with it, the bos/eos strings the template sees.
void read_chat_template(const fs::path& dir, TokenizerFiles& files) {
    const nlohmann::json config = read_tokenizer_config(dir);
    if (auto jinja = read_optional(dir / "chat_template.jinja")) files.chat_template = std::move(jinja);
    else if (config.contains("chat_template") && config["chat_template"].is_string())
        files.chat_template = config["chat_template"].get<std::string>();
    if (!files.chat_template) return;
    const nlohmann::ordered_json tokens = {{"bos_token", token_text(config, "bos_token")},
                                           {"eos_token", token_text(config, "eos_token")}};
    files.chat_tokens_json = tokens.dump(1) + "\n";
}

}  // namespace

TokenizerFiles read_tokenizer_files(const std::string& source_dir, int64_t vocab) {
    TokenizerFiles files;
    const fs::path dir = platform::utf8_path(source_dir);
    files.rank_file = read_optional(dir / "tiktoken.model");
    files.chat_source = "none";
    if (!files.rank_file) {
        files.tokenizer_json = read_optional(dir / "tokenizer.json");
        if (files.tokenizer_json) {
            const std::string what = platform::utf8_text(dir / "tokenizer.json");
            const auto tokenizer = text::parse_tokenizer_json(*files.tokenizer_json, what);
            if (tokenizer->vocab_size() > vocab)
                fail(WASTE_ERR_FORMAT, "{}: id {} is not below config.vocab_size {}", what,
                     tokenizer->vocab_size() - 1, vocab);
            read_chat_template(dir, files);
        }
        return files;
    }
    const std::string rank_what = platform::utf8_text(dir / "tiktoken.model");
    files.ranks = check_rank_file(*files.rank_file, rank_what);
    if (files.ranks > vocab)
        fail(WASTE_ERR_FORMAT, "{}: {} ranks, more than config.vocab_size {}", rank_what, files.ranks, vocab);

    std::map<int64_t, std::string> named;
    const nlohmann::json tokenizer_config = read_tokenizer_config(dir);
    {
        if (tokenizer_config.contains("added_tokens_decoder")) {
            const nlohmann::json& added = tokenizer_config["added_tokens_decoder"];
            if (!added.is_object())
                fail(WASTE_ERR_FORMAT, "tokenizer_config.json: added_tokens_decoder is not an object");
            for (const auto& [key, value] : added.items()) {
                if (key.empty() || key.size() > 9 || key.find_first_not_of("0123456789") != std::string::npos ||
                    !value.is_object() || !value.contains("content") || !value["content"].is_string())
                    fail(WASTE_ERR_FORMAT, "tokenizer_config.json: added_tokens_decoder.{} is not {{\"content\": text}}",
                         key);
                named[std::stoll(key)] = value["content"].get<std::string>();
            }
        }
    }
    std::map<int64_t, std::string> specials;
    for (int64_t id = files.ranks; id < vocab; ++id) {
        const auto it = named.find(id);
        specials[id] = it != named.end() ? it->second : fmt::format("<|reserved_token_{}|>", id);
    }
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const auto& [id, text] : specials) list.push_back({{"id", id}, {"text", text}});
    files.specials_json = list.dump(1) + "\n";

    if (auto chat = read_optional(dir / "chat.json")) {
        const nlohmann::json parsed = nlohmann::json::parse(*chat, nullptr, false);
        if (parsed.is_discarded() || !parsed.is_object())
            fail(WASTE_ERR_FORMAT, "{}: not a JSON object", platform::utf8_text(dir / "chat.json"));
        files.chat_json = std::move(chat);
        files.chat_source = "release";
    } else if (has_all(specials, {"<|open|>", "<|sep|>", "<|end_of_msg|>"})) {
        // K3's XTML turns (models.md §9), as waste synth writes them.
        const nlohmann::ordered_json xtml = {
            {"system", {"<|open|>system<|sep|>", "<|end_of_msg|>"}},
            {"user", {"<|open|>user<|sep|>", "<|end_of_msg|>"}},
            {"assistant", {"<|open|>assistant<|sep|>", "<|end_of_msg|>"}},
            {"open", "<|open|>assistant<|sep|>"},
        };
        files.chat_json = xtml.dump(1) + "\n";
        files.chat_source = "xtml";
    } else if (has_all(specials, {"<|im_system|>", "<|im_user|>", "<|im_assistant|>", "<|im_middle|>", "<|im_end|>"})) {
        // The markup of Kimi-Linear's and K2's chat template.
        const nlohmann::ordered_json im = {
            {"system", {"<|im_system|>system<|im_middle|>", "<|im_end|>"}},
            {"user", {"<|im_user|>user<|im_middle|>", "<|im_end|>"}},
            {"assistant", {"<|im_assistant|>assistant<|im_middle|>", "<|im_end|>"}},
            {"open", "<|im_assistant|>assistant<|im_middle|>"},
        };
        files.chat_json = im.dump(1) + "\n";
        files.chat_source = "im";
    }
    read_chat_template(dir, files);
    return files;
}

}  // namespace waste::convert
