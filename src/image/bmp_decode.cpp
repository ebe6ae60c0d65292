// bmp_decode.cpp — BMP through stb_image (Debian's libstb), the decoder
// upstream uses for every format. Only data that starts "BM" reaches it, and
// stb's own header probe (stbi_info) gives the size that is checked against
// the pixel bound before stb allocates anything; req_comp 3 gives RGB with
// alpha dropped and grey/palette expanded. stb reads past the end of a
// truncated BMP as zeros, so an uncompressed BMP's pixel array is checked
// here to lie inside the file (a truncated file is refused, not blackened).
#include <stb/stb_image.h>

#include <cstring>
#include <limits>
#include <memory>

#include "image/codecs.h"
#include "platform/error.h"

namespace waste::image::detail {
namespace {

constexpr const char* format = "BMP";

const char* reason() {
    const char* text = stbi_failure_reason();
    return text ? text : "unknown error";
}

uint32_t little_endian(std::string_view bytes, size_t offset, size_t count) {
    uint32_t value = 0;
    for (size_t i = 0; i < count; ++i) value |= uint32_t{static_cast<uint8_t>(bytes[offset + i])} << (8 * i);
    return value;
}

// The uncompressed pixel array (BI_RGB 0 or BI_BITFIELDS 3) must fit between
// bfOffBits and the end of the file; other compressions stb checks itself or refuses.
void check_pixel_array(std::string_view bytes, const std::string& name, uint64_t width, uint64_t height) {
    // The file header (14 bytes) and the info header's size field, then the whole info header.
    const uint64_t header = bytes.size() >= 18 ? little_endian(bytes, 14, 4) : 0;
    if (bytes.size() < 18 || header < 12 || bytes.size() < 14 + header)
        fail(WASTE_ERR_FORMAT, "{}: BMP: truncated file: {} bytes end inside the headers", name, bytes.size());
    const uint64_t offset = little_endian(bytes, 10, 4);
    uint64_t bits = 0, compression = 0;
    if (header == 12) {
        bits = little_endian(bytes, 24, 2);
    } else if (header >= 20) {
        bits = little_endian(bytes, 28, 2);
        compression = little_endian(bytes, 30, 4);
    }
    if (compression != 0 && compression != 3) return;
    const uint64_t row_bytes = (width * bits + 31) / 32 * 4;
    const uint64_t needed = offset + row_bytes * height;
    if (needed > bytes.size())
        fail(WASTE_ERR_FORMAT, "{}: BMP: truncated file: {}x{} at {} bits per pixel needs {} bytes, the file has {}", name,
             width, height, bits, needed, bytes.size());
}

ImageSize probe(std::string_view bytes, const std::string& name) {
    if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()))
        fail(WASTE_ERR_FORMAT, "{}: BMP: {} bytes is too large", name, bytes.size());
    int width = 0, height = 0, channels = 0;
    if (!stbi_info_from_memory(reinterpret_cast<const stbi_uc*>(bytes.data()), static_cast<int>(bytes.size()), &width,
                               &height, &channels))
        fail(WASTE_ERR_FORMAT, "{}: BMP: {}", name, reason());
    // stbi_info passes a top-down BMP's negative height through (stbi_load takes its absolute value).
    if (height < 0 && height != std::numeric_limits<int>::min()) height = -height;
    if (width < 0 || height < 0) fail(WASTE_ERR_FORMAT, "{}: BMP: header declares {}x{}", name, width, height);
    check_pixel_count(name, format, static_cast<uint64_t>(width), static_cast<uint64_t>(height));
    check_pixel_array(bytes, name, static_cast<uint64_t>(width), static_cast<uint64_t>(height));
    return {static_cast<uint32_t>(width), static_cast<uint32_t>(height)};
}

}  // namespace

ImageSize bmp_dimensions(std::string_view bytes, const std::string& name) { return probe(bytes, name); }

RgbImage bmp_decode(std::string_view bytes, const std::string& name) {
    const ImageSize size = probe(bytes, name);
    int width = 0, height = 0, channels = 0;
    const std::unique_ptr<stbi_uc, void (*)(void*)> pixels(
        stbi_load_from_memory(reinterpret_cast<const stbi_uc*>(bytes.data()), static_cast<int>(bytes.size()), &width,
                              &height, &channels, 3),
        stbi_image_free);
    if (!pixels) fail(WASTE_ERR_FORMAT, "{}: BMP: {}", name, reason());
    if (static_cast<uint32_t>(width) != size.width || static_cast<uint32_t>(height) != size.height)
        fail(WASTE_ERR_FORMAT, "{}: BMP: decoded {}x{}, header said {}x{}", name, width, height, size.width, size.height);
    RgbImage image = allocate_rgb(name, format, size.width, size.height);
    std::memcpy(image.rgb.data(), pixels.get(), image.rgb.size());
    return image;
}

}  // namespace waste::image::detail
