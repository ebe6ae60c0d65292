// gif_decode.cpp — a GIF's first frame through giflib, as stb_image
// delivers it: a canvas of the logical screen's size, the frame's colour
// table (local, else global) expanded to RGB, black where the frame is
// transparent, and the background colour (or black) where it does not cover
// the screen. Later frames are never read.
//
// giflib reports errors as status codes; every call is checked and the code
// named with GifErrorString. The screen size is checked against the pixel
// bound before the canvas is allocated, and the frame must lie inside the
// screen (stb refuses such a file too).
#include <gif_lib.h>

#include <vector>

#include "image/codecs.h"
#include "platform/error.h"

namespace waste::image::detail {
namespace {

constexpr const char* gif_format = "GIF";

int on_read(GifFileType* gif, GifByteType* out, int count) {
    return static_cast<int>(static_cast<ByteCursor*>(gif->UserData)->read(out, count < 0 ? 0 : static_cast<size_t>(count)));
}

struct GifReader {
    ByteCursor input;
    GifFileType* gif = nullptr;
    const std::string& name;
    GifReader(std::string_view bytes, const std::string& name_) : name(name_) {
        input.bytes = bytes;
        int error = 0;
        gif = DGifOpen(&input, on_read, &error);
        if (!gif) fail(WASTE_ERR_FORMAT, "{}: GIF: {}", name, describe(error));
    }
    ~GifReader() {
        int error = 0;
        if (gif) DGifCloseFile(gif, &error);
    }
    GifReader(const GifReader&) = delete;
    GifReader& operator=(const GifReader&) = delete;
    static const char* describe(int error) {
        const char* text = GifErrorString(error);
        return text ? text : "unknown error";
    }
    [[noreturn]] void refuse() const { fail(WASTE_ERR_FORMAT, "{}: GIF: {}", name, describe(gif->Error)); }
};

// stb_image, on the first frame: screen pixels the frame does not cover take
// the global table's background colour when its index is above 0 (index 0,
// or no global table, leaves them black); the frame's own transparent pixels
// stay black either way.
void fill_background(const GifFileType* gif, const GifImageDesc& frame, RgbImage* image) {
    const ColorMapObject* map = gif->SColorMap;
    const int index = gif->SBackGroundColor;
    if (index <= 0 || !map || !map->Colors || index >= map->ColorCount) return;
    const GifColorType colour = map->Colors[index];
    for (int y = 0; y < gif->SHeight; ++y) {
        for (int x = 0; x < gif->SWidth; ++x) {
            if (y >= frame.Top && y < frame.Top + frame.Height && x >= frame.Left && x < frame.Left + frame.Width) continue;
            uint8_t* out = image->rgb.data() + (size_t(y) * gif->SWidth + size_t(x)) * 3;
            out[0] = colour.Red;
            out[1] = colour.Green;
            out[2] = colour.Blue;
        }
    }
}

}  // namespace

ImageSize gif_dimensions(std::string_view bytes, const std::string& name) {
    GifReader reader(bytes, name);
    check_pixel_count(name, gif_format, reader.gif->SWidth, reader.gif->SHeight);
    return {static_cast<uint32_t>(reader.gif->SWidth), static_cast<uint32_t>(reader.gif->SHeight)};
}

RgbImage gif_decode(std::string_view bytes, const std::string& name) {
    GifReader reader(bytes, name);
    GifFileType* gif = reader.gif;
    RgbImage image = allocate_rgb(name, gif_format, gif->SWidth, gif->SHeight);   // zero: black
    int transparent = -1;   // from the Graphic Control Extension before the frame
    for (;;) {
        GifRecordType record = UNDEFINED_RECORD_TYPE;
        if (DGifGetRecordType(gif, &record) == GIF_ERROR) reader.refuse();
        if (record == TERMINATE_RECORD_TYPE) fail(WASTE_ERR_FORMAT, "{}: GIF: no image in the file", name);
        if (record == EXTENSION_RECORD_TYPE) {
            int code = 0;
            GifByteType* block = nullptr;
            if (DGifGetExtension(gif, &code, &block) == GIF_ERROR) reader.refuse();
            if (code == GRAPHICS_EXT_FUNC_CODE && block && block[0] >= 4)
                transparent = (block[1] & 1) ? block[4] : -1;
            while (block) {
                if (DGifGetExtensionNext(gif, &block) == GIF_ERROR) reader.refuse();
            }
            continue;
        }
        if (record != IMAGE_DESC_RECORD_TYPE) continue;
        if (DGifGetImageDesc(gif) == GIF_ERROR) reader.refuse();
        const GifImageDesc& frame = gif->Image;
        if (frame.Left < 0 || frame.Top < 0 || frame.Width <= 0 || frame.Height <= 0 ||
            frame.Left + frame.Width > gif->SWidth || frame.Top + frame.Height > gif->SHeight)
            fail(WASTE_ERR_FORMAT, "{}: GIF: first frame {}x{} at ({}, {}) does not lie inside the {}x{} screen", name,
                 frame.Width, frame.Height, frame.Left, frame.Top, gif->SWidth, gif->SHeight);
        const ColorMapObject* map = frame.ColorMap ? frame.ColorMap : gif->SColorMap;
        if (!map || !map->Colors || map->ColorCount <= 0) fail(WASTE_ERR_FORMAT, "{}: GIF: the first frame has no colour table", name);
        std::vector<GifPixelType> line(static_cast<size_t>(frame.Width));
        // Interlaced frames arrive in four passes: rows 0,8,16.. then 4,12.. then 2,6.. then 1,3..
        static constexpr int pass_start[4] = {0, 4, 2, 1}, pass_step[4] = {8, 8, 4, 2};
        const int passes = frame.Interlace ? 4 : 1;
        for (int pass = 0; pass < passes; ++pass) {
            const int step = frame.Interlace ? pass_step[pass] : 1;
            for (int row = frame.Interlace ? pass_start[pass] : 0; row < frame.Height; row += step) {
                if (DGifGetLine(gif, line.data(), frame.Width) == GIF_ERROR) reader.refuse();
                uint8_t* out = image.rgb.data() + (size_t(frame.Top + row) * gif->SWidth + size_t(frame.Left)) * 3;
                for (int x = 0; x < frame.Width; ++x, out += 3) {
                    const int index = line[size_t(x)];
                    if (index == transparent) continue;   // the black canvas shows through
                    if (index >= map->ColorCount) continue;   // outside the table: left black
                    out[0] = map->Colors[index].Red;
                    out[1] = map->Colors[index].Green;
                    out[2] = map->Colors[index].Blue;
                }
            }
        }
        fill_background(gif, frame, &image);
        return image;
    }
}

}  // namespace waste::image::detail
