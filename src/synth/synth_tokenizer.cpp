#include "synth/synth_tokenizer.h"

#include <string_view>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "platform/error.h"
#include "synth/synth_random.h"
#include "text/base64.h"

namespace waste::synth {
namespace {

// Common English pieces, each the join of two tokens before it (checked).
constexpr std::string_view curated_merges[] = {
    " t", " a", "he", "in", "er", "an", "on", "re", " s", "en", "at", "or", "es", "is", "it", "ou", "nd", "ed", "ar",
    "al", "le", "st", "ic", "ro", "ll", "ve", "ch", "ly", "om", " w", " o", " c", " b", " f", " p", " m", " d", " h",
    " th", "the", " the", "ing", "ion", "ent", " in", " to", " and", " of", " is", "ation", " be", " re", "ter", " for",
    " on", " it", "as", "se", "ut", " I", " l", " n", " e", " g", "ers", " that", "th", " y", " you", "ment", " wh",
};

constexpr const char* named_specials[] = {"[BOS]",         "[EOS]",           "<|end_of_msg|>", "<|open|>",
                                      "<|close|>",     "<|sep|>",         "<|media_begin|>", "<|media_content|>",
                                      "<|media_pad|>", "<|media_end|>"};
constexpr int named_special_count = sizeof(named_specials) / sizeof(named_specials[0]);
static_assert(std::string_view("<|media_pad|>") == named_specials[media_pad_special_slot]);
// The vocabulary of generated merges does not depend on the container seed.
constexpr uint64_t merge_stream_seed = 0x746F6B656E73ull;  // "tokens"
constexpr size_t max_generated_token_bytes = 16;
constexpr size_t max_tail_bytes = 3;

bool is_lower_word(std::string_view token, bool allow_leading_space) {
    if (allow_leading_space && !token.empty() && token[0] == ' ') token.remove_prefix(1);
    if (token.empty()) return false;
    for (char c : token)
        if (c < 'a' || c > 'z') return false;
    return true;
}

}  // namespace

SyntheticTokenizer build_tokenizer(int64_t vocab, int special_slots) {
    WASTE_CHECK(special_slots >= named_special_count);
    const int64_t ranks = vocab - special_slots;
    WASTE_CHECK(ranks >= 256);
    std::vector<std::string> tokens;
    tokens.reserve(static_cast<size_t>(ranks));
    std::unordered_set<std::string> seen;
    for (int b = 0; b < 256; ++b) {
        tokens.emplace_back(1, static_cast<char>(b));
        seen.insert(tokens.back());
    }
    auto splits_into_known = [&](const std::string& token) {
        for (size_t cut = 1; cut < token.size(); ++cut)
            if (seen.count(token.substr(0, cut)) && seen.count(token.substr(cut))) return true;
        return false;
    };
    for (std::string_view merge : curated_merges) {
        if (static_cast<int64_t>(tokens.size()) == ranks) break;
        std::string token(merge);
        WASTE_CHECK(!seen.count(token) && splits_into_known(token));
        tokens.push_back(token);
        seen.insert(token);
    }
    // Word-like merges: a word start (optionally after a space) joined to a
    // short lower-case continuation, both already tokens; the lengths are
    // chosen so that every candidate fits, and a candidate is only refused
    // when it exists already.
    std::vector<uint32_t> starts, tails;
    auto classify = [&](uint32_t id) {
        const std::string& token = tokens[id];
        if (token.size() + max_tail_bytes <= max_generated_token_bytes && is_lower_word(token, true)) starts.push_back(id);
        if (token.size() <= max_tail_bytes && is_lower_word(token, false)) tails.push_back(id);
    };
    for (uint32_t id = 0; id < tokens.size(); ++id) classify(id);
    Random random(merge_stream_seed);
    while (static_cast<int64_t>(tokens.size()) < ranks) {
        std::string token = tokens[starts[random.next() % starts.size()]] + tokens[tails[random.next() % tails.size()]];
        if (!seen.insert(token).second) continue;
        tokens.push_back(std::move(token));
        classify(static_cast<uint32_t>(tokens.size() - 1));
    }

    SyntheticTokenizer result;
    result.ranks = ranks;
    result.rank_file.reserve(tokens.size() * 20);
    for (size_t rank = 0; rank < tokens.size(); ++rank)
        result.rank_file += fmt::format("{} {}\n", text::encode_base64(tokens[rank]), rank);

    nlohmann::ordered_json specials = nlohmann::ordered_json::array();
    for (int i = 0; i < special_slots; ++i) {
        const int64_t id = ranks + i;
        specials.push_back({{"id", id},
                            {"text", i < named_special_count ? std::string(named_specials[i])
                                                             : fmt::format("<|reserved_token_{}|>", id)}});
    }
    result.specials_json = specials.dump(1) + "\n";

    // XTML turns: <|open|>role<|sep|>content, closed by <|end_of_msg|> (the EOS id).
    const nlohmann::ordered_json chat = {
        {"system", {"<|open|>system<|sep|>", "<|end_of_msg|>"}},
        {"user", {"<|open|>user<|sep|>", "<|end_of_msg|>"}},
        {"assistant", {"<|open|>assistant<|sep|>", "<|end_of_msg|>"}},
        {"open", "<|open|>assistant<|sep|>"},
    };
    result.chat_json = chat.dump(1) + "\n";
    return result;
}

}  // namespace waste::synth
