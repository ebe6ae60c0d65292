// image_decode_fuzz.cpp — libFuzzer target over src/image's decoders (PNG,
// JPEG with EXIF, GIF, WebP, BMP) and the patch step after them.
//
// The input is a file's bytes. The probe and the decode either succeed or
// throw waste::Error; anything else (another exception, a crash, an ASan or
// UBSan report, a leak) is a finding. A decode that succeeds is checked
// against what image.h promises: w·h within [1, max_pixels], exactly w·h·3
// bytes, and the same size as the header probe. Small decoded images also go
// through image_to_patches at a small budget, whose tensor must be finite.
// Seeds: fuzz/seeds/image_decode_fuzz/ (one tiny file per format).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "image/image.h"
#include "image/patches.h"
#include "platform/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    waste::image::ImageSize probed;
    bool probe_ok = false;
    try {
        probed = waste::image::image_dimensions(bytes, "fuzz");
        probe_ok = true;
    } catch (const waste::Error&) {
    }
    try {
        const waste::image::RgbImage image = waste::image::decode_image(bytes, "fuzz");
        const uint64_t pixels = uint64_t{image.width} * image.height;
        if (pixels < 1 || pixels > waste::image::max_pixels) __builtin_trap();
        if (image.rgb.size() != pixels * 3) __builtin_trap();
        // Every decode reads the header the probe reads.
        if (!probe_ok || probed.width != image.width || probed.height != image.height) __builtin_trap();
        if (pixels <= 4096) {
            const waste::image::PatchTensor t = waste::image::image_to_patches(image, 16, {});
            if (t.pixels.size() != size_t{t.grid.width} * t.grid.height * waste::image::patch_values) __builtin_trap();
            for (float v : t.pixels)
                if (!std::isfinite(v)) __builtin_trap();
        }
    } catch (const waste::Error&) {
    }
    return 0;
}
