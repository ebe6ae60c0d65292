// image.h — an image file's bytes to 8-bit RGB, and the header-only size probe.
//
// Owns format detection (by magic bytes, never by file name), the pixel-count
// bound checked before any allocation, and the channel rules of
// docs/IMAGES.md (vision.md §2.1): 3 channels, 8 bits, grey replicated, alpha
// dropped (not composited), palettes expanded, 16-bit samples keep their high
// byte. JPEG EXIF orientation is applied (upstream does not; see IMAGES.md).
// Does not resize or normalise: that is patches.h.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace waste::image {

// vision.md §2.1: the header's w·h must be ≥ 1 and ≤ 64·2^20 pixels, so one
// decode is bounded at 192 MiB of RGB (the memory plan's decode reserve).
inline constexpr uint64_t max_pixels = uint64_t{64} << 20;
// A file larger than this is refused before it is read: no supported format
// needs more than ~4 bytes per pixel at the pixel bound, plus slack for
// metadata (a bound, not a promise that any such file decodes).
inline constexpr uint64_t max_file_bytes = uint64_t{320} << 20;

// libjpeg's working memory cap (jpeg_decode.cpp): a progressive image holds
// every coefficient, 2 bytes per sample, 3 full-size components at the pixel
// bound, plus 64 MiB for its tables and row buffers.
inline constexpr uint64_t max_codec_working_bytes = max_pixels * 3 * 2 + (uint64_t{64} << 20);
// The most one decode holds at once — the file's bytes, the RGB pixels and
// their EXIF-rotated copy, a codec's working memory — the memory plan's
// decode reserve (1,152 MiB).
inline constexpr uint64_t decode_reserve_bytes = max_file_bytes + 2 * max_pixels * 3 + max_codec_working_bytes;

enum class ImageFormat { png, jpeg, gif, webp, bmp };

struct ImageSize {
    uint32_t width = 0, height = 0;   // as the pixels will be delivered (after EXIF rotation)
};

struct RgbImage {
    uint32_t width = 0, height = 0;
    std::vector<uint8_t> rgb;   // [height][width][3] u8, R G B, rows top to bottom
};

// `name` names the image in every error ("photo.jpg: JPEG: ..."). Errors are
// waste::Error: WASTE_ERR_UNSUPPORTED for an unknown or refused format or
// variant, WASTE_ERR_FORMAT for a corrupt, truncated or oversized image.
ImageSize image_dimensions(std::string_view bytes, const std::string& name);
RgbImage decode_image(std::string_view bytes, const std::string& name);

// The file at `path` read whole (at most max_file_bytes; WASTE_ERR_IO when it
// cannot be read), then as above, with the path as the name.
ImageSize image_dimensions_file(const std::string& path);
RgbImage decode_image_file(const std::string& path);

}  // namespace waste::image
