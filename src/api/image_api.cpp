// image_api.cpp — C API entry points over src/image: the header-only size
// probe. Decoding to patches and the tower are reached through the model
// once vision is wired in; nothing here needs a model.
#include "api/api_support.h"
#include "image/image.h"

using waste::api::guarded;

extern "C" {

waste_status waste_image_dimensions(const char* path, uint32_t* out_width, uint32_t* out_height, waste_error* error) {
    return guarded(error, [&] {
        if (!path || !out_width || !out_height)
            waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_image_dimensions: path, out_width and out_height are required");
        const waste::image::ImageSize size = waste::image::image_dimensions_file(path);
        *out_width = size.width;
        *out_height = size.height;
    });
}

waste_status waste_image_dimensions_bytes(const void* bytes, size_t size, const char* name, uint32_t* out_width,
                                          uint32_t* out_height, waste_error* error) {
    return guarded(error, [&] {
        if ((!bytes && size) || !out_width || !out_height)
            waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_image_dimensions_bytes: bytes, out_width and out_height are required");
        if (size > waste::image::max_file_bytes)
            waste::fail(WASTE_ERR_FORMAT, "{}: {} bytes, more than an image may hold ({})", name ? name : "image", size,
                        waste::image::max_file_bytes);
        const waste::image::ImageSize found =
            waste::image::image_dimensions(std::string_view(static_cast<const char*>(bytes), size), name ? name : "image");
        *out_width = found.width;
        *out_height = found.height;
    });
}

}  // extern "C"
