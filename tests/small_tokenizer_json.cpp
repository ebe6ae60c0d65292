// small_tokenizer_json.cpp — a small tokenizer.json (small_tokenizer_json.h).
#include "small_tokenizer_json.h"

#include "text_corpus.h"

namespace waste_test {

std::string byte_level(std::string_view bytes) {
    std::string out;
    for (const char ch : bytes) {
        const auto byte = static_cast<uint8_t>(ch);
        uint32_t code_point = byte;
        if (!((byte >= 0x21 && byte <= 0x7E) || (byte >= 0xA1 && byte <= 0xAC) || byte >= 0xAE)) {
            uint32_t shifted = 0;
            for (uint32_t b = 0; b < byte; ++b)
                if (!((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE)) ++shifted;
            code_point = 0x100 + shifted;
        }
        out += utf8(code_point);
    }
    return out;
}

nlohmann::json small_tokenizer(const std::vector<std::string>& tokens, const std::vector<std::string>& merges) {
    using nlohmann::json;
    json vocab = json::object();
    for (int byte = 0; byte < 256; ++byte) vocab[byte_level(std::string(1, static_cast<char>(byte)))] = byte;
    for (size_t i = 0; i < tokens.size(); ++i) vocab[byte_level(tokens[i])] = 256 + i;
    json merge_list = json::array();
    for (const auto& merge : merges) {
        const size_t space = merge.find(' ');
        merge_list.push_back(byte_level(merge.substr(0, space)) + " " + byte_level(merge.substr(space + 1)));
    }
    return json{
        {"version", "1.0"},
        {"truncation", nullptr},
        {"padding", nullptr},
        {"added_tokens",
         json::array({{{"id", 256 + tokens.size()}, {"content", "<|end|>"}, {"single_word", false}, {"lstrip", false},
                       {"rstrip", false}, {"normalized", false}, {"special", true}}})},
        {"normalizer", nullptr},
        {"pre_tokenizer",
         {{"type", "Sequence"},
          {"pretokenizers",
           json::array({{{"type", "Split"},
                         {"pattern", {{"Regex", "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}}},
                         {"behavior", "Isolated"},
                         {"invert", false}},
                        {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}}})}}},
        {"post_processor", nullptr},
        {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}}},
        {"model",
         {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"continuing_subword_prefix", ""},
          {"end_of_word_suffix", ""}, {"fuse_unk", false}, {"byte_fallback", false}, {"ignore_merges", false},
          {"vocab", vocab}, {"merges", merge_list}}}};
}

}  // namespace waste_test
