// webp_decode.cpp — a still WebP (lossy or lossless, with or without alpha)
// through libwebp to 8-bit RGB; alpha is dropped, not composited
// (MODE_RGB ignores the alpha plane). Animated WebP is refused by name:
// upstream (stb_image) reads no WebP at all, and a first-frame rule would be
// ours alone to invent.
#include <webp/decode.h>

#include "image/codecs.h"
#include "platform/error.h"

namespace waste::image::detail {
namespace {

constexpr const char* webp_format = "WebP";

const char* describe(VP8StatusCode status) {
    switch (status) {
        case VP8_STATUS_OK: return "ok";
        case VP8_STATUS_OUT_OF_MEMORY: return "out of memory";
        case VP8_STATUS_INVALID_PARAM: return "invalid parameter";
        case VP8_STATUS_BITSTREAM_ERROR: return "corrupt bitstream";
        case VP8_STATUS_UNSUPPORTED_FEATURE: return "unsupported feature";
        case VP8_STATUS_SUSPENDED: return "suspended";
        case VP8_STATUS_USER_ABORT: return "aborted";
        case VP8_STATUS_NOT_ENOUGH_DATA: return "truncated file (not enough data)";
    }
    return "unknown error";
}

WebPBitstreamFeatures features_of(std::string_view bytes, const std::string& name) {
    WebPBitstreamFeatures features{};
    const VP8StatusCode status = WebPGetFeatures(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), &features);
    if (status != VP8_STATUS_OK) fail(WASTE_ERR_FORMAT, "{}: WebP: {}", name, describe(status));
    check_pixel_count(name, webp_format, static_cast<uint64_t>(features.width), static_cast<uint64_t>(features.height));
    if (features.has_animation) fail(WASTE_ERR_UNSUPPORTED, "{}: WebP: animated WebP is not supported", name);
    return features;
}

}  // namespace

ImageSize webp_dimensions(std::string_view bytes, const std::string& name) {
    const WebPBitstreamFeatures features = features_of(bytes, name);
    return {static_cast<uint32_t>(features.width), static_cast<uint32_t>(features.height)};
}

RgbImage webp_decode(std::string_view bytes, const std::string& name) {
    const WebPBitstreamFeatures features = features_of(bytes, name);
    RgbImage image = allocate_rgb(name, webp_format, static_cast<uint64_t>(features.width), static_cast<uint64_t>(features.height));
    WebPDecoderConfig config;
    if (!WebPInitDecoderConfig(&config)) fail(WASTE_ERR_INTERNAL, "{}: WebP: decoder version mismatch", name);
    config.output.colorspace = MODE_RGB;
    config.output.is_external_memory = 1;
    config.output.u.RGBA.rgba = image.rgb.data();
    config.output.u.RGBA.stride = static_cast<int>(image.width) * 3;
    config.output.u.RGBA.size = image.rgb.size();
    const VP8StatusCode status = WebPDecode(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), &config);
    WebPFreeDecBuffer(&config.output);   // frees nothing of ours: the memory is external
    if (status != VP8_STATUS_OK) fail(WASTE_ERR_FORMAT, "{}: WebP: {}", name, describe(status));
    return image;
}

}  // namespace waste::image::detail
