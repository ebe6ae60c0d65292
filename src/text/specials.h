// specials.h — special tokens: parsing specials.json (container-v0 §6) and
// finding them in markup-mode text.
//
// Markup mode recognises a special wherever its exact text occurs: the
// leftmost occurrence first, and of the specials starting there the longest
// (so "<|im_end|>" wins over a special "<|im" should both exist). Plain mode
// never calls this: there a special's text is ordinary bytes.
//
// Deliberately not here: which ids are BOS/EOS (tokenizer_loader.h) and
// whether an id collides with a rank (tokenizer.h).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "text/utf8.h"

namespace waste::text {

struct SpecialToken {
    int32_t id = 0;
    std::string text;
    // Hugging Face added tokens' flags: the whitespace before (lstrip) or
    // after (rstrip) a match is taken into the token, so it never reaches
    // the text on that side (tokenizer.json; specials.json has neither).
    bool lstrip = false;
    bool rstrip = false;
};

// Bounds a special must keep (why: real specials are under 40 bytes, and a
// vocabulary holds at most RankTable::max_rank + 1 ids).
inline constexpr size_t max_special_bytes = 256;
inline constexpr size_t max_specials = 1u << 16;
inline constexpr int32_t max_token_id = (1 << 24) - 1;

// `[{"id": N, "text": "<|open|>"}, ...]`; `where` names the file in errors.
// Refuses a bad shape, an id out of [0, max_token_id], an empty or too long
// text, and a text or id given twice.
std::vector<SpecialToken> parse_specials_json(std::string_view json_text, const std::string& where);

class SpecialMatcher {
public:
    explicit SpecialMatcher(const std::vector<SpecialToken>& specials);

    struct Match {
        size_t offset = 0;
        size_t length = 0;
        int32_t id = 0;
        bool lstrip = false;
        bool rstrip = false;
    };
    // The first special at or after `from`.
    std::optional<Match> find(std::string_view text, size_t from) const;

    // Cuts text at its specials: on_text(segment) for the text between
    // them (never empty), on_special(id) for each, in order. A special's
    // lstrip drops the whitespace ending the text before it, its rstrip the
    // whitespace starting the text after it (Unicode White_Space, as Rust's
    // char::is_whitespace that Hugging Face's tokenizers use).
    template <typename OnText, typename OnSpecial>
    void split(std::string_view text, OnText&& on_text, OnSpecial&& on_special) const {
        size_t position = 0;
        while (position < text.size()) {
            const auto special = find(text, position);
            size_t end = special ? special->offset : text.size();
            if (special && special->lstrip) end = position + whitespace_suffix_start(text.substr(position, end - position));
            if (end > position) on_text(text.substr(position, end - position));
            if (!special) break;
            on_special(special->id);
            position = special->offset + special->length;
            if (special->rstrip) position += whitespace_prefix_end(text.substr(position));
        }
    }

private:
    std::vector<SpecialToken> by_first_byte_[256];  // each longest first
    std::array<bool, 256> starts_{};
};

}  // namespace waste::text
