// safetensors_fuzz.cpp — libFuzzer target over the safetensors header parser.
//
// The input is a file image: 8-byte little-endian header length, header
// JSON, data. A parse either succeeds or throws waste::Error; anything else
// (another exception, a crash, an ASan or UBSan report) is a finding. A header
// that parses is checked against the rules the reader promises: every tensor
// inside the file, extent = numel * dtype size, no two tensors overlapping,
// the name index agreeing with the list. The header bytes are also parsed as
// if the file were larger, so offsets past the real end are explored too.
// Seeds: fuzz/seeds/safetensors_fuzz/ (hand-made files of a few tensors).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "convert/safetensors.h"
#include "platform/error.h"

namespace {

void check(std::string_view header_json, uint64_t file_bytes) {
    try {
        const waste::convert::SafetensorsHeader h =
            waste::convert::parse_safetensors_header(header_json, file_bytes, "fuzz.safetensors");
        uint64_t previous_end = 0;
        for (const auto& t : h.tensors) {
            if (h.find(t.name) != &t) __builtin_trap();
            if (t.bytes != t.numel * waste::convert::dtype_size(t.dtype)) __builtin_trap();
            if (t.begin < h.data_start || t.begin > file_bytes || t.bytes > file_bytes - t.begin) __builtin_trap();
            if (t.bytes == 0) continue;
            if (t.begin < previous_end) __builtin_trap();  // sorted by offset, disjoint
            previous_end = t.begin + t.bytes;
        }
    } catch (const waste::Error&) {
        // refused with a message: the expected outcome for most inputs
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 8) return 0;
    uint64_t length = 0;
    for (int i = 7; i >= 0; --i) length = (length << 8) | data[i];
    const std::string_view rest(reinterpret_cast<const char*>(data) + 8, size - 8);
    if (length <= rest.size()) check(rest.substr(0, length), size);
    check(rest, size + 4096);
    return 0;
}
