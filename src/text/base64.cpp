// base64.cpp — see base64.h.
#include "text/base64.h"

#include <algorithm>
#include <array>
#include <cstdint>

namespace waste::text {
namespace {

constexpr uint8_t not_base64 = 0xFF;
constexpr char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

constexpr std::array<uint8_t, 256> base64_values() {
    std::array<uint8_t, 256> values{};
    for (auto& value : values) value = not_base64;
    for (uint8_t i = 0; i < 64; ++i) values[static_cast<uint8_t>(alphabet[i])] = i;
    return values;
}
constexpr auto base64_table = base64_values();

}  // namespace

bool decode_base64(std::string_view text, std::string& out) {
    if (text.empty() || text.size() % 4 != 0) return false;
    size_t padding = 0;
    if (text.back() == '=') padding = text[text.size() - 2] == '=' ? 2 : 1;
    for (size_t i = 0; i < text.size(); i += 4) {
        const bool last = i + 4 == text.size();
        uint32_t block = 0;
        for (size_t k = 0; k < 4; ++k) {
            const char ch = text[i + k];
            uint8_t value;
            if (ch == '=' && last && k >= 4 - padding) value = 0;
            else if ((value = base64_table[static_cast<uint8_t>(ch)]) == not_base64) return false;
            block = (block << 6) | value;
        }
        const size_t bytes = last ? 3 - padding : 3;
        // Non-canonical encodings (bits set in the padding) are refused so that
        // one token has one spelling.
        if (last && padding == 1 && (block & 0xFF) != 0) return false;
        if (last && padding == 2 && (block & 0xFFFF) != 0) return false;
        out.push_back(static_cast<char>(block >> 16));
        if (bytes > 1) out.push_back(static_cast<char>(block >> 8));
        if (bytes > 2) out.push_back(static_cast<char>(block));
    }
    return true;
}

std::string encode_base64(std::string_view bytes) {
    std::string out;
    out.reserve((bytes.size() + 2) / 3 * 4);
    for (size_t i = 0; i < bytes.size(); i += 3) {
        const size_t n = std::min<size_t>(3, bytes.size() - i);
        uint32_t block = static_cast<uint32_t>(static_cast<uint8_t>(bytes[i])) << 16;
        if (n > 1) block |= static_cast<uint32_t>(static_cast<uint8_t>(bytes[i + 1])) << 8;
        if (n > 2) block |= static_cast<uint8_t>(bytes[i + 2]);
        out += alphabet[(block >> 18) & 63];
        out += alphabet[(block >> 12) & 63];
        out += n > 1 ? alphabet[(block >> 6) & 63] : '=';
        out += n > 2 ? alphabet[block & 63] : '=';
    }
    return out;
}

}  // namespace waste::text
