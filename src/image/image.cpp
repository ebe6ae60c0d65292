// image.cpp — format detection by magic bytes, the shared pixel bound, and
// the file helpers; the decoding itself is in the per-format files.
#include "image/image.h"

#include <algorithm>
#include <cstring>
#include <iterator>

#include "image/codecs.h"
#include "platform/direct_file.h"
#include "platform/error.h"

namespace waste::image {
namespace {

bool starts_with(std::string_view bytes, std::string_view magic) { return bytes.substr(0, magic.size()) == magic; }

ImageFormat detect_format(std::string_view bytes, const std::string& name) {
    if (bytes.empty()) fail(WASTE_ERR_FORMAT, "{}: the image file is empty", name);
    if (starts_with(bytes, "\x89PNG\r\n\x1a\n")) return ImageFormat::png;
    if (starts_with(bytes, "\xff\xd8\xff")) return ImageFormat::jpeg;
    if (starts_with(bytes, "GIF87a") || starts_with(bytes, "GIF89a")) return ImageFormat::gif;
    if (bytes.size() >= 12 && starts_with(bytes, "RIFF") && bytes.substr(8, 4) == "WEBP") return ImageFormat::webp;
    if (starts_with(bytes, "BM")) return ImageFormat::bmp;
    std::string head;
    for (size_t i = 0; i < bytes.size() && i < 8; ++i) head += fmt::format("{:02x}", static_cast<uint8_t>(bytes[i]));
    fail(WASTE_ERR_UNSUPPORTED, "{}: not a PNG, JPEG, GIF, WebP or BMP image (first bytes {})", name, head);
}

// Each format's probe and decoder, indexed by ImageFormat.
struct Codec {
    ImageSize (*dimensions)(std::string_view bytes, const std::string& name);
    RgbImage (*decode)(std::string_view bytes, const std::string& name);
};
constexpr Codec codecs[] = {
    {detail::png_dimensions, detail::png_decode},
    {detail::jpeg_dimensions, detail::jpeg_decode},
    {detail::gif_dimensions, detail::gif_decode},
    {detail::webp_dimensions, detail::webp_decode},
    {detail::bmp_dimensions, detail::bmp_decode},
};
static_assert(static_cast<size_t>(ImageFormat::bmp) + 1 == std::size(codecs));

}  // namespace

namespace detail {

size_t ByteCursor::read(void* out, size_t count) {
    const size_t n = std::min(count, bytes.size() - offset);
    std::memcpy(out, bytes.data() + offset, n);
    offset += n;
    return n;
}

void check_pixel_count(const std::string& name, const char* format, uint64_t width, uint64_t height) {
    // Each side fits 32 bits in every supported format, so the product cannot overflow.
    const uint64_t pixels = width * height;
    if (pixels < 1 || pixels > max_pixels)
        fail(WASTE_ERR_FORMAT, "{}: {} header declares {}x{} = {} pixels, outside [1, {}]", name, format, width, height,
             pixels, max_pixels);
}

RgbImage allocate_rgb(const std::string& name, const char* format, uint64_t width, uint64_t height) {
    check_pixel_count(name, format, width, height);
    RgbImage image;
    image.width = static_cast<uint32_t>(width);
    image.height = static_cast<uint32_t>(height);
    image.rgb.resize(width * height * 3);
    return image;
}

}  // namespace detail

ImageSize image_dimensions(std::string_view bytes, const std::string& name) {
    return codecs[static_cast<size_t>(detect_format(bytes, name))].dimensions(bytes, name);
}

RgbImage decode_image(std::string_view bytes, const std::string& name) {
    return codecs[static_cast<size_t>(detect_format(bytes, name))].decode(bytes, name);
}

ImageSize image_dimensions_file(const std::string& path) { return image_dimensions(platform::read_small_file(path, max_file_bytes), path); }
RgbImage decode_image_file(const std::string& path) { return decode_image(platform::read_small_file(path, max_file_bytes), path); }

}  // namespace waste::image
