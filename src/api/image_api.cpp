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

}  // extern "C"
