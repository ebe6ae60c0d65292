// utf8.cpp — UTF-8 validation and the incomplete-tail test (utf8.h).
#include "text/utf8.h"

#include <cstdint>
#include <cstring>

namespace waste::text {
namespace {

// The sequence length a lead byte announces; 0 for a byte that cannot lead
// (continuation bytes, C0/C1 overlong leads, F5..FF).
int sequence_length(uint8_t lead) {
    if (lead < 0x80) return 1;
    if (lead < 0xC2) return 0;
    if (lead < 0xE0) return 2;
    if (lead < 0xF0) return 3;
    if (lead < 0xF5) return 4;
    return 0;
}

// The allowed range of the byte after a lead (RFC 3629 table 3-7): it is what
// excludes overlong forms, surrogates and code points above U+10FFFF.
bool second_byte_ok(uint8_t lead, uint8_t second) {
    switch (lead) {
        case 0xE0: return second >= 0xA0 && second <= 0xBF;
        case 0xED: return second >= 0x80 && second <= 0x9F;
        case 0xF0: return second >= 0x90 && second <= 0xBF;
        case 0xF4: return second >= 0x80 && second <= 0x8F;
        default: return (second & 0xC0) == 0x80;
    }
}

}  // namespace

size_t find_invalid_utf8(std::string_view text) {
    const auto* bytes = reinterpret_cast<const uint8_t*>(text.data());
    const size_t size = text.size();
    size_t i = 0;
    while (i < size) {
        // Eight ASCII bytes at a time: most text is mostly ASCII.
        if (i + 8 <= size) {
            uint64_t word;
            std::memcpy(&word, bytes + i, 8);
            if ((word & 0x8080808080808080ull) == 0) {
                i += 8;
                continue;
            }
        }
        const uint8_t lead = bytes[i];
        if (lead < 0x80) {
            ++i;
            continue;
        }
        const int length = sequence_length(lead);
        if (length == 0 || i + length > size) return i;
        if (!second_byte_ok(lead, bytes[i + 1])) return i;
        for (int k = 2; k < length; ++k)
            if ((bytes[i + k] & 0xC0) != 0x80) return i;
        i += length;
    }
    return utf8_valid;
}

size_t incomplete_utf8_tail(std::string_view text) {
    const auto* bytes = reinterpret_cast<const uint8_t*>(text.data());
    const size_t size = text.size();
    // The lead byte of an unfinished sequence is at most 3 bytes from the end.
    for (size_t back = 1; back <= 3 && back <= size; ++back) {
        const uint8_t byte = bytes[size - back];
        if ((byte & 0xC0) == 0x80) continue;  // a continuation byte: look further back
        const int length = sequence_length(byte);
        if (length <= static_cast<int>(back)) return 0;  // complete, or cannot lead
        if (back >= 2 && !second_byte_ok(byte, bytes[size - back + 1])) return 0;
        return back;
    }
    return 0;
}

namespace {

bool is_white_space(uint32_t c) {
    return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) ||
           c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

// The code point starting at bytes[at] of valid UTF-8, and its length.
uint32_t code_point_at(const uint8_t* bytes, size_t at, int& length) {
    const uint8_t lead = bytes[at];
    length = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
    uint32_t c = length == 1 ? lead : lead & (0x7F >> length);
    for (int i = 1; i < length; ++i) c = (c << 6) | (bytes[at + i] & 0x3F);
    return c;
}

}  // namespace

size_t whitespace_prefix_end(std::string_view text) {
    const auto* bytes = reinterpret_cast<const uint8_t*>(text.data());
    size_t at = 0;
    while (at < text.size()) {
        int length = 0;
        if (!is_white_space(code_point_at(bytes, at, length))) break;
        at += static_cast<size_t>(length);
    }
    return at;
}

size_t whitespace_suffix_start(std::string_view text) {
    const auto* bytes = reinterpret_cast<const uint8_t*>(text.data());
    size_t end = text.size();
    while (end > 0) {
        size_t start = end - 1;
        while (start > 0 && (bytes[start] & 0xC0) == 0x80) --start;  // back to the lead byte
        int length = 0;
        if (!is_white_space(code_point_at(bytes, start, length))) break;
        end = start;
    }
    return end;
}

}  // namespace waste::text
