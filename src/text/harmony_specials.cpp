// harmony_specials.cpp — o200k_harmony's special tokens (harmony_specials.h).
#include "text/harmony_specials.h"

#include <string>

namespace waste::text {

std::vector<SpecialToken> o200k_harmony_specials() {
    // Why these bounds: o200k_harmony's vocabulary is 201,088 ids, the
    // specials starting after o200k_base's 199,998 ranks.
    constexpr int32_t first = 199998, end = 201088;
    std::vector<SpecialToken> specials;
    for (int32_t id = first; id < end; ++id) {
        const char* name = nullptr;
        switch (id) {
            case 199998: name = "<|startoftext|>"; break;
            case 199999: name = "<|endoftext|>"; break;
            case 200002: name = "<|return|>"; break;
            case 200003: name = "<|constrain|>"; break;
            case 200005: name = "<|channel|>"; break;
            case 200006: name = "<|start|>"; break;
            case 200007: name = "<|end|>"; break;
            case 200008: name = "<|message|>"; break;
            case 200012: name = "<|call|>"; break;
            case 200018: name = "<|endofprompt|>"; break;
            default: break;
        }
        specials.push_back({id, name ? std::string(name) : "<|reserved_" + std::to_string(id) + "|>"});
    }
    return specials;
}

}  // namespace waste::text
