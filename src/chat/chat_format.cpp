// chat_format.cpp — detecting XTML (see chat_format.h).
#include "chat/chat_format.h"

#include "chat/xtml_render.h"

namespace waste::chat {

bool speaks_xtml(const text::Tokenizer& tokenizer, std::array<int32_t, 4>& marker_ids) {
    const char* markers[4] = {xtml_open, xtml_close, xtml_sep, xtml_end_of_msg};
    for (size_t i = 0; i < 4; ++i) {
        const auto ids = tokenizer.encode(markers[i], true);
        const auto special = tokenizer.special_id(markers[i]);
        if (ids.size() != 1 || !special || *special != ids[0]) {
            marker_ids = {-1, -1, -1, -1};
            return false;
        }
        marker_ids[i] = ids[0];
    }
    return true;
}

}  // namespace waste::chat
