// byte_level.cpp — the inverse of GPT-2's bytes_to_unicode (byte_level.h).
#include "text/byte_level.h"

#include <array>
#include <cstdint>

namespace waste::text {
namespace {

// Code points U+0000..U+0143 (the alphabet's highest is U+0100 + 67) -> byte + 1; 0 = not in the alphabet.
constexpr uint32_t alphabet_end = 0x144;

constexpr std::array<uint16_t, alphabet_end> byte_of_code_point_table() {
    std::array<uint16_t, alphabet_end> table{};
    uint32_t shifted = 0;
    for (uint32_t byte = 0; byte < 256; ++byte) {
        const bool printable = (byte >= 0x21 && byte <= 0x7E) || (byte >= 0xA1 && byte <= 0xAC) || byte >= 0xAE;
        const uint32_t code_point = printable ? byte : 0x100 + shifted++;
        table[code_point] = static_cast<uint16_t>(byte + 1);
    }
    return table;
}
constexpr auto byte_of_code_point = byte_of_code_point_table();

}  // namespace

std::optional<std::string> bytes_of_byte_level(std::string_view mapped) {
    std::string bytes;
    bytes.reserve(mapped.size());
    for (size_t i = 0; i < mapped.size();) {
        const auto lead = static_cast<uint8_t>(mapped[i]);
        uint32_t code_point;
        if (lead < 0x80) {
            code_point = lead;
            i += 1;
        } else if ((lead & 0xE0) == 0xC0 && i + 1 < mapped.size() &&
                   (static_cast<uint8_t>(mapped[i + 1]) & 0xC0) == 0x80) {
            code_point = ((lead & 0x1Fu) << 6) | (static_cast<uint8_t>(mapped[i + 1]) & 0x3Fu);
            if (code_point < 0x80) return std::nullopt;  // overlong
            i += 2;
        } else {
            return std::nullopt;  // three- and four-byte forms are above the alphabet
        }
        if (code_point >= alphabet_end || byte_of_code_point[code_point] == 0) return std::nullopt;
        bytes.push_back(static_cast<char>(byte_of_code_point[code_point] - 1));
    }
    return bytes;
}

}  // namespace waste::text
