// base64_encode.h — standard padded base64 (RFC 4648 §4) for tests that build
// inputs the library decodes (tiktoken rank files, data: URLs); the library
// itself only decodes (src/text/base64.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace waste_test {

inline std::string base64_encode(const std::string& bytes) {
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    for (size_t i = 0; i < bytes.size(); i += 3) {
        const size_t n = bytes.size() - i < 3 ? bytes.size() - i : 3;
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

}  // namespace waste_test
