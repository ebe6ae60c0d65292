// exif_orientation.cpp — see exif_orientation.h.
#include "image/exif_orientation.h"

#include <utility>

namespace waste::image {
namespace {

// A TIFF reader over the bytes after "Exif\0\0"; every read bounds-checked.
struct Tiff {
    std::string_view bytes;
    bool little_endian = true;
    bool read16(size_t offset, uint32_t* out) const {
        if (offset > bytes.size() || bytes.size() - offset < 2) return false;
        const auto b0 = static_cast<uint8_t>(bytes[offset]), b1 = static_cast<uint8_t>(bytes[offset + 1]);
        *out = little_endian ? (b0 | b1 << 8) : (b0 << 8 | b1);
        return true;
    }
    bool read32(size_t offset, uint32_t* out) const {
        uint32_t a = 0, b = 0;
        if (!read16(offset, &a) || !read16(offset + 2, &b)) return false;
        *out = little_endian ? (a | b << 16) : (a << 16 | b);
        return true;
    }
};

}  // namespace

int exif_orientation(std::string_view payload) {
    constexpr std::string_view magic("Exif\0\0", 6);
    if (payload.substr(0, magic.size()) != magic) return 1;
    Tiff tiff{payload.substr(magic.size())};
    if (tiff.bytes.substr(0, 4) == std::string_view("II*\0", 4)) tiff.little_endian = true;
    else if (tiff.bytes.substr(0, 4) == std::string_view("MM\0*", 4)) tiff.little_endian = false;
    else return 1;
    uint32_t ifd = 0, entries = 0;
    if (!tiff.read32(4, &ifd) || !tiff.read16(ifd, &entries)) return 1;
    for (uint32_t i = 0; i < entries; ++i) {
        const size_t entry = size_t{ifd} + 2 + size_t{i} * 12;   // tag u16, type u16, count u32, value 4 bytes
        uint32_t tag = 0, type = 0, count = 0, value = 0;
        if (!tiff.read16(entry, &tag) || !tiff.read16(entry + 2, &type) || !tiff.read32(entry + 4, &count)) return 1;
        if (tag != 0x0112) continue;
        // SHORT (type 3), one value, left-justified in the 4-byte field.
        if (type != 3 || count != 1 || !tiff.read16(entry + 8, &value)) return 1;
        return value >= 1 && value <= 8 ? static_cast<int>(value) : 1;
    }
    return 1;
}

RgbImage apply_orientation(RgbImage in, int orientation) {
    if (orientation < 2 || orientation > 8) return in;
    const size_t w = in.width, h = in.height;
    RgbImage out;
    const bool swap = orientation_swaps_sides(orientation);
    out.width = static_cast<uint32_t>(swap ? h : w);
    out.height = static_cast<uint32_t>(swap ? w : h);
    out.rgb.resize(in.rgb.size());
    for (size_t Y = 0; Y < out.height; ++Y) {
        for (size_t X = 0; X < out.width; ++X) {
            size_t x = X, y = Y;   // the stored pixel shown at (X, Y)
            switch (orientation) {
                case 2: x = w - 1 - X; break;                        // mirrored left-right
                case 3: x = w - 1 - X; y = h - 1 - Y; break;         // turned 180
                case 4: y = h - 1 - Y; break;                        // mirrored top-bottom
                case 5: x = Y; y = X; break;                         // transposed
                case 6: x = Y; y = h - 1 - X; break;                 // stored turned 90 counter-clockwise
                case 7: x = w - 1 - Y; y = h - 1 - X; break;         // transversed
                case 8: x = w - 1 - Y; y = X; break;                 // stored turned 90 clockwise
            }
            const uint8_t* from = in.rgb.data() + (y * w + x) * 3;
            uint8_t* to = out.rgb.data() + (Y * out.width + X) * 3;
            to[0] = from[0];
            to[1] = from[1];
            to[2] = from[2];
        }
    }
    return out;
}

}  // namespace waste::image
