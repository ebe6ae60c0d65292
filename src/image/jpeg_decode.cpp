// jpeg_decode.cpp — JPEG through libjpeg-turbo (baseline and progressive,
// grey or YCbCr) to 8-bit RGB, turned upright by the EXIF orientation.
//
// libjpeg reports errors through error_exit, which must not return: ours
// copies the message and longjmps back into the small phase function that
// called the library (trivially destructible locals only), so no C++
// destructor is skipped. A premature end of data is only a warning to
// libjpeg (it pads with grey); here it is an error, so a truncated file is
// refused rather than half-invented. CMYK and YCCK (Adobe) JPEGs are refused
// by name: their inverted-ink conventions are not something we convert.
// Progressive scans and libjpeg's working memory are bounded (below).
// The reported size is the upright one: orientations 5..8 swap W and H
// (upstream reports and uses the stored size; docs/IMAGES.md).
// jpeglib.h uses size_t and FILE without including their headers.
#include <csetjmp>
#include <cstddef>
#include <cstdio>
#include <cstring>

#include <jpeglib.h>
#include <jerror.h>

#include "image/codecs.h"
#include "image/exif_orientation.h"
#include "platform/error.h"

namespace waste::image::detail {
namespace {

constexpr const char* jpeg_format = "JPEG";

struct JpegErrors {
    jpeg_error_mgr manager;   // first: libjpeg hands us a jpeg_error_mgr*
    std::jmp_buf jump;
    char message[JMSG_LENGTH_MAX] = {};
};

void on_error_exit(j_common_ptr info) {
    auto* errors = reinterpret_cast<JpegErrors*>(info->err);
    info->err->format_message(info, errors->message);
    std::longjmp(errors->jump, 1);
}

void on_message(j_common_ptr info, int level) {
    // A truncated file: libjpeg would warn and pad with grey; refuse instead.
    if (level < 0 && info->err->msg_code == JWRN_JPEG_EOF) on_error_exit(info);
}

// A progressive JPEG may hold any number of scans, each re-reading the whole
// coefficient buffer: a small hostile file can take minutes. Refuse past the
// limit TurboJPEG itself uses for untrusted input (tjDecompress's -limitscans).
constexpr int max_scans = 500;

void on_progress(j_common_ptr info) {
    auto* decompress = reinterpret_cast<j_decompress_ptr>(info);
    if (decompress->input_scan_number > max_scans) {
        auto* errors = reinterpret_cast<JpegErrors*>(info->err);
        std::snprintf(errors->message, sizeof errors->message, "more than %d progressive scans", max_scans);
        std::longjmp(errors->jump, 1);
    }
}

// libjpeg's working memory (a progressive image holds every coefficient,
// 2 bytes per sample): 3 full-size components at the pixel bound, plus
// 64 MiB for its tables and row buffers; above it libjpeg refuses (it has no
// backing store) rather than allocating.
static_assert(sizeof(JCOEF) == 2);
constexpr long max_working_bytes = static_cast<long>(max_codec_working_bytes);

struct JpegReader {
    jpeg_decompress_struct info{};
    JpegErrors errors;
    jpeg_progress_mgr progress{};
    JpegReader() {
        info.err = jpeg_std_error(&errors.manager);
        errors.manager.error_exit = on_error_exit;
        errors.manager.emit_message = on_message;
        errors.manager.output_message = [](j_common_ptr) {};   // the library never prints
        progress.progress_monitor = on_progress;
    }
    ~JpegReader() { jpeg_destroy_decompress(&info); }
    JpegReader(const JpegReader&) = delete;
    JpegReader& operator=(const JpegReader&) = delete;
};

// Reads the header (keeping APP1 segments for EXIF); false on a libjpeg error.
bool read_header(JpegReader* reader, std::string_view bytes) {
    if (setjmp(reader->errors.jump)) return false;
    jpeg_create_decompress(&reader->info);
    reader->info.progress = &reader->progress;
    reader->info.mem->max_memory_to_use = max_working_bytes;
    jpeg_mem_src(&reader->info, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
    jpeg_save_markers(&reader->info, JPEG_APP0 + 1, 0xffff);
    jpeg_read_header(&reader->info, TRUE);
    return true;
}

bool start(JpegReader* reader) {
    if (setjmp(reader->errors.jump)) return false;
    reader->info.out_color_space = JCS_RGB;
    jpeg_start_decompress(&reader->info);
    return true;
}

bool read_rows(JpegReader* reader, uint8_t* rgb, size_t row_bytes) {
    if (setjmp(reader->errors.jump)) return false;
    while (reader->info.output_scanline < reader->info.output_height) {
        JSAMPROW row = rgb + size_t{reader->info.output_scanline} * row_bytes;
        jpeg_read_scanlines(&reader->info, &row, 1);
    }
    return true;
}

int orientation_of(const jpeg_decompress_struct& info) {
    for (jpeg_saved_marker_ptr marker = info.marker_list; marker; marker = marker->next) {
        if (marker->marker != JPEG_APP0 + 1) continue;
        const int orientation =
            exif_orientation({reinterpret_cast<const char*>(marker->data), marker->data_length});
        if (orientation != 1) return orientation;
    }
    return 1;
}

void refuse_colour_space(const jpeg_decompress_struct& info, const std::string& name) {
    if (info.jpeg_color_space == JCS_CMYK || info.jpeg_color_space == JCS_YCCK)
        fail(WASTE_ERR_UNSUPPORTED, "{}: JPEG: {} colour is not supported (save the image as RGB)", name,
             info.jpeg_color_space == JCS_CMYK ? "CMYK" : "YCCK");
    if (info.jpeg_color_space != JCS_GRAYSCALE && info.jpeg_color_space != JCS_YCbCr && info.jpeg_color_space != JCS_RGB)
        fail(WASTE_ERR_UNSUPPORTED, "{}: JPEG: colour space {} with {} components is not supported", name,
             static_cast<int>(info.jpeg_color_space), info.num_components);
}

}  // namespace

ImageSize jpeg_dimensions(std::string_view bytes, const std::string& name) {
    JpegReader reader;
    if (!read_header(&reader, bytes)) fail(WASTE_ERR_FORMAT, "{}: JPEG: {}", name, reader.errors.message);
    check_pixel_count(name, jpeg_format, reader.info.image_width, reader.info.image_height);
    refuse_colour_space(reader.info, name);
    if (orientation_swaps_sides(orientation_of(reader.info))) return {reader.info.image_height, reader.info.image_width};
    return {reader.info.image_width, reader.info.image_height};
}

RgbImage jpeg_decode(std::string_view bytes, const std::string& name) {
    JpegReader reader;
    if (!read_header(&reader, bytes)) fail(WASTE_ERR_FORMAT, "{}: JPEG: {}", name, reader.errors.message);
    check_pixel_count(name, jpeg_format, reader.info.image_width, reader.info.image_height);
    refuse_colour_space(reader.info, name);
    const int orientation = orientation_of(reader.info);
    if (!start(&reader)) fail(WASTE_ERR_FORMAT, "{}: JPEG: {}", name, reader.errors.message);
    if (reader.info.output_components != 3 || reader.info.output_width != reader.info.image_width ||
        reader.info.output_height != reader.info.image_height)
        fail(WASTE_ERR_INTERNAL, "{}: JPEG: decoder output {}x{}x{} for a {}x{} image", name, reader.info.output_width,
             reader.info.output_height, reader.info.output_components, reader.info.image_width, reader.info.image_height);
    RgbImage image = allocate_rgb(name, jpeg_format, reader.info.output_width, reader.info.output_height);
    if (!read_rows(&reader, image.rgb.data(), size_t{image.width} * 3))
        fail(WASTE_ERR_FORMAT, "{}: JPEG: {}", name, reader.errors.message);
    return apply_orientation(std::move(image), orientation);
}

}  // namespace waste::image::detail
