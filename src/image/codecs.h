// codecs.h — the per-format decoders behind image.h (internal to src/image).
//
// Each format has a header probe (size only, no pixel allocation) and a
// decoder that checks the same size against the pixel bound before it
// allocates. Every decoder delivers [h][w][3] u8 under image.h's channel
// rules; each library's error path (libpng/libjpeg longjmp, giflib and
// libwebp status codes, stb's failure string) becomes a waste::Error naming
// the image and the format.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "image/image.h"

namespace waste::image::detail {

// A file's bytes handed out front to back by a library's read callback.
struct ByteCursor {
    std::string_view bytes;
    size_t offset = 0;
    // Copies up to `count` bytes to `out`; returns how many (fewer at the end).
    size_t read(void* out, size_t count);
};

// Refuses w·h outside [1, max_pixels], naming the image, format and values.
void check_pixel_count(const std::string& name, const char* format, uint64_t width, uint64_t height);
// An RgbImage of w×h, its buffer allocated after check_pixel_count.
RgbImage allocate_rgb(const std::string& name, const char* format, uint64_t width, uint64_t height);

ImageSize png_dimensions(std::string_view bytes, const std::string& name);
RgbImage png_decode(std::string_view bytes, const std::string& name);
ImageSize jpeg_dimensions(std::string_view bytes, const std::string& name);
RgbImage jpeg_decode(std::string_view bytes, const std::string& name);
ImageSize gif_dimensions(std::string_view bytes, const std::string& name);
RgbImage gif_decode(std::string_view bytes, const std::string& name);
ImageSize webp_dimensions(std::string_view bytes, const std::string& name);
RgbImage webp_decode(std::string_view bytes, const std::string& name);
ImageSize bmp_dimensions(std::string_view bytes, const std::string& name);
RgbImage bmp_decode(std::string_view bytes, const std::string& name);

}  // namespace waste::image::detail
