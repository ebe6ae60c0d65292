// png_decode.cpp — PNG through libpng: every colour type and bit depth to
// 8-bit RGB (vision.md §2.1).
//
// libpng reports errors by longjmp. Each phase that calls into libpng is a
// small function holding only trivially destructible locals, with its own
// setjmp, so the jump never skips a C++ destructor; allocation happens
// between phases, in C++, after the header's size was checked.
#include <png.h>

#include <csetjmp>
#include <cstring>
#include <vector>

#include "image/codecs.h"
#include "platform/error.h"

namespace waste::image::detail {
namespace {

constexpr const char* png_format = "PNG";

struct PngInput {
    ByteCursor cursor;
    char message[256] = {};   // libpng's error text, copied before the longjmp
};

void on_error(png_structp png, png_const_charp message) {
    auto* input = static_cast<PngInput*>(png_get_error_ptr(png));
    std::strncpy(input->message, message ? message : "unknown error", sizeof input->message - 1);
    png_longjmp(png, 1);
}
void on_warning(png_structp, png_const_charp) {}   // the library never prints

void on_read(png_structp png, png_bytep out, size_t count) {
    auto* input = static_cast<PngInput*>(png_get_io_ptr(png));
    if (input->cursor.read(out, count) != count) png_error(png, "truncated file (read past the end)");
}

// Owns the read and info structs.
struct PngReader {
    PngInput input;
    png_structp png = nullptr;
    png_infop info = nullptr;
    PngReader(std::string_view bytes, const std::string& name) {
        input.cursor.bytes = bytes;
        png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &input, on_error, on_warning);
        if (png) info = png_create_info_struct(png);
        if (!png || !info) fail(WASTE_ERR_OUT_OF_MEMORY, "{}: PNG: cannot create the decoder", name);
        png_set_read_fn(png, &input, on_read);
        // Our own bound is checked after the header; libpng's per-side limit
        // must not refuse first with a vaguer message.
        png_set_user_limits(png, 0x7fffffff, 0x7fffffff);
    }
    ~PngReader() { png_destroy_read_struct(&png, &info, nullptr); }
    PngReader(const PngReader&) = delete;
    PngReader& operator=(const PngReader&) = delete;
};

// Reads the header and sets the transforms to 8-bit RGB; false on a libpng error.
bool read_header(png_structp png, png_infop info, png_uint_32* width, png_uint_32* height, bool transforms) {
    if (setjmp(png_jmpbuf(png))) return false;
    png_read_info(png, info);
    *width = png_get_image_width(png, info);
    *height = png_get_image_height(png, info);
    if (!transforms) return true;
    const int color_type = png_get_color_type(png, info);
    // 16-bit samples keep their high byte (strip, not scale: stb's >> 8).
    png_set_strip_16(png);
    if (color_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
    if (color_type == PNG_COLOR_TYPE_GRAY || color_type == PNG_COLOR_TYPE_GRAY_ALPHA) {
        png_set_expand_gray_1_2_4_to_8(png);
        png_set_gray_to_rgb(png);
    }
    // Alpha (from the colour type, or a palette's tRNS) is dropped, never
    // composited: the RGB stored under transparent pixels is kept.
    png_set_strip_alpha(png);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    return true;
}

bool read_rows(png_structp png, png_bytepp rows) {
    if (setjmp(png_jmpbuf(png))) return false;
    png_read_image(png, rows);
    return true;
}

}  // namespace

ImageSize png_dimensions(std::string_view bytes, const std::string& name) {
    PngReader reader(bytes, name);
    png_uint_32 width = 0, height = 0;
    if (!read_header(reader.png, reader.info, &width, &height, false))
        fail(WASTE_ERR_FORMAT, "{}: PNG: {}", name, reader.input.message);
    check_pixel_count(name, png_format, width, height);
    return {width, height};
}

RgbImage png_decode(std::string_view bytes, const std::string& name) {
    PngReader reader(bytes, name);
    png_uint_32 width = 0, height = 0;
    if (!read_header(reader.png, reader.info, &width, &height, true))
        fail(WASTE_ERR_FORMAT, "{}: PNG: {}", name, reader.input.message);
    RgbImage image = allocate_rgb(name, png_format, width, height);
    const size_t row_bytes = png_get_rowbytes(reader.png, reader.info);
    if (png_get_channels(reader.png, reader.info) != 3 || row_bytes != size_t{width} * 3)
        fail(WASTE_ERR_INTERNAL, "{}: PNG: transforms gave {} channels, {} bytes per row for width {}", name,
             png_get_channels(reader.png, reader.info), row_bytes, width);
    std::vector<png_bytep> rows(height);
    for (size_t y = 0; y < height; ++y) rows[y] = image.rgb.data() + y * row_bytes;
    if (!read_rows(reader.png, rows.data())) fail(WASTE_ERR_FORMAT, "{}: PNG: {}", name, reader.input.message);
    return image;
}

}  // namespace waste::image::detail
