// tokenizer_loader.cpp — a Tokenizer from a container or a rank file
// (tokenizer_loader.h).
#include "text/tokenizer_loader.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "platform/error.h"
#include "platform/utf8_path.h"
#include "text/hf_tokenizer_json.h"

namespace waste::text {
namespace {

int32_t find_special(const std::vector<SpecialToken>& specials, std::string_view text) {
    for (const auto& special : specials)
        if (special.text == text) return special.id;
    return -1;
}

}  // namespace

std::string read_bounded_file(const std::string& path, uint64_t max_bytes) {
    std::ifstream file(platform::utf8_path(path), std::ios::binary);
    if (!file) fail(WASTE_ERR_IO, "{}: cannot open: {}", path, std::strerror(errno));
    std::string bytes;
    char buffer[1 << 16];
    while (file) {
        file.read(buffer, sizeof buffer);
        const auto got = static_cast<size_t>(file.gcount());
        if (bytes.size() + got > max_bytes)
            fail(WASTE_ERR_FORMAT, "{}: larger than the {} bytes allowed", path, max_bytes);
        bytes.append(buffer, got);
    }
    if (file.bad()) fail(WASTE_ERR_IO, "{}: read failed: {}", path, std::strerror(errno));
    return bytes;
}

PatternKind default_pattern(const format::ModelConfig& config) {
    return config.model_type == "gpt_oss" ? PatternKind::o200k : PatternKind::kimi;
}

uint64_t container_tokenizer_file_bytes(const format::Container& container) {
    // The file load_container_tokenizer reads: tokenizer.json (each byte one
    // character of the byte-level alphabet, at least one byte of UTF-8),
    // else tokenizer.model (base64 of each token's bytes).
    const std::filesystem::path directory = platform::utf8_path(container.directory());
    std::error_code error;
    for (const char* name : {"tokenizer.json", "tokenizer.model"}) {
        const auto bytes = std::filesystem::file_size(directory / name, error);
        if (!error) return static_cast<uint64_t>(bytes);
    }
    return 0;
}

std::shared_ptr<const Tokenizer> load_container_tokenizer(const format::Container& container,
                                                          std::optional<PatternKind> pattern) {
    namespace fs = std::filesystem;
    const fs::path directory = platform::utf8_path(container.directory());
    const fs::path rank_path = directory / "tokenizer.model", specials_path = directory / "specials.json";
    const std::string rank_name = platform::utf8_text(rank_path), specials_name = platform::utf8_text(specials_path);
    std::error_code error;
    if (const fs::path json_path = directory / "tokenizer.json"; fs::exists(json_path, error))
        return load_container_tokenizer_json(container, platform::utf8_text(json_path), pattern);
    if (!fs::exists(rank_path, error))
        fail(WASTE_ERR_UNSUPPORTED,
             "{}: the container has no tokenizer.model or tokenizer.json, so it cannot turn text into tokens",
             container.directory());
    RankTable ranks = RankTable::parse(read_bounded_file(rank_name, max_rank_file_bytes), rank_name);
    std::vector<SpecialToken> specials;
    if (fs::exists(specials_path, error))
        specials = parse_specials_json(read_bounded_file(specials_name, max_specials_file_bytes), specials_name);

    const auto& config = container.config();
    if (config.vocab > 0) {
        if (ranks.size() > static_cast<uint32_t>(config.vocab))
            fail_format("{}: rank {} is not below config.vocab_size {}", rank_name, ranks.size() - 1, config.vocab);
        for (const auto& special : specials)
            if (special.id >= config.vocab)
                fail_format("{}: special \"{}\" has id {}, not below config.vocab_size {}", specials_name,
                            escape_bytes(special.text), special.id, config.vocab);
    }
    const int64_t bos = config.bos >= 0 ? config.bos : static_cast<int64_t>(ranks.size());
    const int64_t eos = config.eos;
    if (bos > max_token_id || eos > max_token_id)
        fail_format("{}: bos_token_id {} / eos_token_id {} out of range", container.directory(), bos, eos);
    auto tokenizer = std::make_shared<Tokenizer>(std::move(ranks), std::move(specials),
                                                 pattern.value_or(default_pattern(config)), static_cast<int32_t>(bos),
                                                 static_cast<int32_t>(eos), config.vocab);
    tokenizer->add_eos_ids(config.eos_ids);
    return tokenizer;
}

std::shared_ptr<const Tokenizer> load_container_tokenizer_json(const format::Container& container,
                                                               const std::string& path,
                                                               std::optional<PatternKind> pattern) {
    if (pattern)
        fail(WASTE_ERR_INVALID_ARGUMENT, "{}: a tokenizer.json has its own pre-tokenizer; pattern {} does not apply",
             path, pattern_name(*pattern));
    const auto& config = container.config();
    if (config.bos > max_token_id || config.eos > max_token_id)
        fail_format("{}: bos_token_id {} / eos_token_id {} out of range", container.directory(), config.bos, config.eos);
    TokenizerIds ids;
    ids.bos = config.bos >= 0 ? static_cast<int32_t>(config.bos) : -1;
    ids.eos = config.eos >= 0 ? static_cast<int32_t>(config.eos) : -1;
    ids.eos_ids = config.eos_ids;
    ids.model_vocab = config.vocab > 0 ? static_cast<int32_t>(std::min<int64_t>(config.vocab, max_token_id + 1)) : 0;
    auto tokenizer = parse_tokenizer_json(read_bounded_file(path, max_tokenizer_json_bytes), path, ids);
    if (config.vocab > 0 && tokenizer->vocab_size() > config.vocab)
        fail_format("{}: id {} is not below config.vocab_size {}", path, tokenizer->vocab_size() - 1, config.vocab);
    return tokenizer;
}

std::shared_ptr<const Tokenizer> load_tokenizer_file(const std::string& rank_file_path, PatternKind pattern,
                                                     const std::optional<std::string>& specials_json) {
    RankTable ranks = RankTable::parse(read_bounded_file(rank_file_path, max_rank_file_bytes), rank_file_path);
    std::vector<SpecialToken> specials;
    if (specials_json) specials = parse_specials_json(*specials_json, "specials");
    const int32_t bos = find_special(specials, "[BOS]");
    const int32_t eos = find_special(specials, "[EOS]");
    return std::make_shared<const Tokenizer>(std::move(ranks), std::move(specials), pattern, bos, eos);
}

}  // namespace waste::text
