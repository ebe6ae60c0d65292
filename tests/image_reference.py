#!/usr/bin/python3
"""image_reference.py — the independent side of tests/image_test.cpp.

`make DIR` writes test images whose pixels this script knows without
decoding them with our code, and DIR/manifest.json saying what each must
decode to (or that it must be refused):
  - PNG written by hand (zlib + chunks) for every colour type and bit depth,
    palette with tRNS, grey+alpha, 16-bit, Adam7-interlaced; the expected RGB
    follows vision.md §2.1's channel rules, computed here from the samples.
  - BMP written by hand (24-bit bottom-up and top-down, 8-bit palette).
  - GIF (first frame of an animated GIF), lossless WebP (alpha dropped, the
    RGB under alpha kept: `exact`), written by Pillow from known arrays.
  - JPEG (baseline, progressive, grey, EXIF orientations 1..8 little- and
    big-endian) and lossy WebP: expected pixels from Pillow's decoder (an
    independent decoder over the same codec library), EXIF applied with
    ImageOps.exif_transpose.
  - hostile files: empty, random, CMYK JPEG, animated WebP, a JPEG with 600
    progressive scans, headers that declare huge or zero sizes.

`patches IN OUT` reads cases (see image_test.cpp) and writes, per case, the
patch tensor computed from vision.md §2.2–2.4 in float64, and again with
§2.3's float32 arithmetic emulated operation by operation in numpy.
"""
import io
import json
import struct
import sys
import zlib

import numpy as np


# ---------------------------------------------------------------- PNG by hand

def png_chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff)


def pack_row(samples, depth):
    """One row of samples (ints) packed big-endian at `depth` bits each."""
    if depth == 16:
        return b"".join(struct.pack(">H", s) for s in samples)
    if depth == 8:
        return bytes(samples)
    out, acc, bits = bytearray(), 0, 0
    for s in samples:
        acc = (acc << depth) | s
        bits += depth
        if bits == 8:
            out.append(acc)
            acc, bits = 0, 0
    if bits:
        out.append(acc << (8 - bits))
    return bytes(out)


ADAM7 = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]


def png_bytes(samples, color_type, depth, palette=None, trns=None, interlace=False, width=None, height=None,
              idat=None):
    """samples: [h][w][channels] ints. width/height override the IHDR (hostile files)."""
    h, w, _ = samples.shape
    ihdr = struct.pack(">IIBBBBB", width if width is not None else w, height if height is not None else h,
                       depth, color_type, 0, 0, 1 if interlace else 0)
    raw = bytearray()
    passes = ADAM7 if interlace else [(0, 0, 1, 1)]
    for x0, y0, dx, dy in passes:
        if x0 >= w or y0 >= h:
            continue
        for y in range(y0, h, dy):
            raw.append(0)  # filter type None
            raw += pack_row([int(v) for v in samples[y, x0::dx].reshape(-1)], depth)
    out = b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", ihdr)
    if palette is not None:
        out += png_chunk(b"PLTE", bytes(np.asarray(palette, dtype=np.uint8).reshape(-1)))
    if trns is not None:
        out += png_chunk(b"tRNS", trns)
    out += png_chunk(b"IDAT", zlib.compress(bytes(raw)) if idat is None else idat)
    return out + png_chunk(b"IEND", b"")


def to8(samples, depth):
    """vision.md §2.1: low depths scale to 0..255; 16-bit keeps the high byte."""
    if depth == 16:
        return samples >> 8
    return samples * (255 // ((1 << depth) - 1))


# ---------------------------------------------------------------- BMP by hand

def bmp_bytes(rgb, top_down=False, palette8=None, indices=None, width=None, height=None):
    h, w = (indices.shape if palette8 is not None else rgb.shape[:2])
    bpp = 8 if palette8 is not None else 24
    stride = (w * bpp + 31) // 32 * 4
    rows = []
    for y in range(h):
        if palette8 is not None:
            row = bytes(indices[y].astype(np.uint8))
        else:
            row = bytes(rgb[y][:, ::-1].astype(np.uint8).reshape(-1))  # stored B G R
        rows.append(row + b"\0" * (stride - len(row)))
    if not top_down:
        rows.reverse()
    colours = b"" if palette8 is None else b"".join(bytes([b, g, r, 0]) for r, g, b in palette8)
    offset = 14 + 40 + len(colours)
    data = b"".join(rows)
    w_field = width if width is not None else w
    h_field = height if height is not None else (-h if top_down else h)
    info = struct.pack("<IiiHHIIiiII", 40, w_field, h_field, 1, bpp, 0, len(data), 2835, 2835,
                       0 if palette8 is None else len(palette8), 0)
    return b"BM" + struct.pack("<IHHI", offset + len(data), 0, 0, offset) + info + colours + data


# ---------------------------------------------------------------- helpers

def pattern(h, w, channels, maximum, seed):
    rng = np.random.default_rng(seed)
    return rng.integers(0, maximum + 1, size=(h, w, channels), dtype=np.int64)


def smooth_rgb(h, w):
    """A smooth image: lossy codecs keep it close, so Pillow and we agree tightly."""
    y, x = np.mgrid[0:h, 0:w]
    r = 128 + 100 * np.sin(x / 5.0)
    g = 128 + 100 * np.cos(y / 4.0)
    b = (x * 7 + y * 3) % 256
    return np.stack([r, g, b], axis=-1).astype(np.uint8)


def exif_app1(orientation, big_endian):
    """An APP1 segment holding IFD0 with only the orientation tag."""
    if big_endian:
        tiff = b"MM\0*" + struct.pack(">I", 8) + struct.pack(">H", 1) + struct.pack(">HHIHH", 0x0112, 3, 1, orientation, 0)
    else:
        tiff = b"II*\0" + struct.pack("<I", 8) + struct.pack("<H", 1) + struct.pack("<HHIHH", 0x0112, 3, 1, orientation, 0)
    tiff += b"\0\0\0\0"  # no next IFD
    payload = b"Exif\0\0" + tiff
    return b"\xff\xe1" + struct.pack(">H", len(payload) + 2) + payload


def make(directory):
    from PIL import Image, ImageOps

    entries = []

    def write(name, data):
        with open(f"{directory}/{name}", "wb") as f:
            f.write(data)

    def expect_pixels(name, data, rgb, tolerance, why):
        write(name, data)
        rgb = np.ascontiguousarray(rgb, dtype=np.uint8)
        write(name + ".rgb", rgb.tobytes())
        entries.append({"file": name, "expect": "pixels", "width": int(rgb.shape[1]), "height": int(rgb.shape[0]),
                        "tolerance": tolerance, "why": why})

    def expect_refusal(name, data, status, contains, probe="refuse"):
        write(name, data)
        entries.append({"file": name, "expect": "refuse", "status": status, "contains": contains, "probe": probe})

    # PNG: every colour type and bit depth, odd widths so rows end mid-byte.
    for depth in (1, 2, 4, 8, 16):
        s = pattern(7, 13, 1, (1 << depth) - 1, depth)
        expect_pixels(f"grey{depth}.png", png_bytes(s, 0, depth), np.repeat(to8(s, depth), 3, axis=2), 0,
                      "grey replicated; low depths scaled, 16-bit keeps the high byte")
    for depth in (8, 16):
        s = pattern(5, 9, 3, (1 << depth) - 1, 20 + depth)
        expect_pixels(f"rgb{depth}.png", png_bytes(s, 2, depth), to8(s, depth), 0, "RGB, 16-bit high byte")
        s = pattern(6, 11, 2, (1 << depth) - 1, 30 + depth)
        expect_pixels(f"grey_alpha{depth}.png", png_bytes(s, 4, depth),
                      np.repeat(to8(s[:, :, :1], depth), 3, axis=2), 0, "alpha dropped, grey replicated")
        s = pattern(4, 10, 4, (1 << depth) - 1, 40 + depth)
        s[0, :, 3] = 0  # fully transparent row: its RGB must survive (dropped, not composited)
        expect_pixels(f"rgba{depth}.png", png_bytes(s, 6, depth), to8(s[:, :, :3], depth), 0,
                      "alpha dropped, not composited: RGB under transparent pixels kept")
    for depth in (1, 2, 4, 8):
        colours = 1 << depth
        palette = pattern(1, colours, 3, 255, 50 + depth)[0]
        idx = pattern(5, 11, 1, colours - 1, 60 + depth)
        expect_pixels(f"palette{depth}.png", png_bytes(idx, 3, depth, palette=palette), palette[idx[:, :, 0]], 0,
                      "palette expanded")
    palette = pattern(1, 16, 3, 255, 70)[0]
    idx = pattern(6, 7, 1, 15, 71)
    expect_pixels("palette_trns.png", png_bytes(idx, 3, 4, palette=palette, trns=bytes(range(0, 160, 10))),
                  palette[idx[:, :, 0]], 0, "palette with tRNS: alpha dropped")
    s = pattern(5, 6, 1, 255, 72)
    expect_pixels("grey_colour_key.png", png_bytes(s, 0, 8, trns=struct.pack(">H", int(s[0, 0, 0]))),
                  np.repeat(s, 3, axis=2), 0, "a grey tRNS colour key is alpha, dropped")
    s = pattern(19, 23, 3, 255, 73)
    expect_pixels("rgb8_adam7.png", png_bytes(s, 2, 8, interlace=True), s, 0, "Adam7 interlace")
    s = pattern(9, 10, 1, 1, 74)
    expect_pixels("grey1_adam7.png", png_bytes(s, 0, 1, interlace=True), np.repeat(s * 255, 3, axis=2), 0,
                  "Adam7 interlace at 1 bit")
    one = np.array([[[10, 200, 30]]])
    expect_pixels("one.png", png_bytes(one, 2, 8), one, 0, "1x1")
    long_row = pattern(1, 100000, 1, 255, 75)
    expect_pixels("long_row.png", png_bytes(long_row, 0, 8), np.repeat(long_row, 3, axis=2), 0, "100000x1")

    # BMP by hand.
    s = pattern(5, 7, 3, 255, 80)
    expect_pixels("rgb24.bmp", bmp_bytes(s), s, 0, "24-bit bottom-up, rows padded to 4 bytes")
    expect_pixels("rgb24_top_down.bmp", bmp_bytes(s, top_down=True), s, 0, "24-bit top-down (negative height)")
    palette = pattern(1, 16, 3, 255, 81)[0]
    idx = pattern(6, 9, 1, 15, 82)[:, :, 0]
    expect_pixels("palette8.bmp", bmp_bytes(None, palette8=[tuple(c) for c in palette], indices=idx), palette[idx], 0,
                  "8-bit palette expanded")

    # GIF: the first frame of an animated GIF; Pillow writes it from known indices.
    palette = pattern(1, 256, 3, 255, 90)[0].astype(np.uint8)
    frames = []
    for k, (h, w) in enumerate([(19, 21), (19, 21)]):
        im = Image.fromarray(pattern(h, w, 1, 255, 91 + k)[:, :, 0].astype(np.uint8), "P")
        im.putpalette(bytes(palette.reshape(-1)))
        frames.append(im)
    buffer = io.BytesIO()
    frames[0].save(buffer, "GIF", save_all=True, append_images=frames[1:], optimize=False, duration=100, loop=0)
    first = np.asarray(Image.open(io.BytesIO(buffer.getvalue())).convert("RGB"))
    assert (first == palette[np.asarray(frames[0])]).all(), "Pillow changed the GIF's first frame"
    expect_pixels("animated.gif", buffer.getvalue(), first, 0, "first frame of two (interlaced: 21 px wide)")
    small = Image.fromarray(pattern(5, 9, 1, 3, 93)[:, :, 0].astype(np.uint8), "P")
    small.putpalette(bytes(palette[:4].reshape(-1)))
    buffer = io.BytesIO()
    small.save(buffer, "GIF", optimize=False, interlace=False)
    expect_pixels("small.gif", buffer.getvalue(), palette[np.asarray(small)], 0, "still GIF, not interlaced")

    # A screen larger than the frame, background index 2: stb fills the
    # uncovered pixels with the global table's colour 2.
    gif = bytearray(buffer.getvalue())
    assert gif[10] & 0x80 and gif[0x19] == 0x2c, "Pillow wrote no global table or moved the image descriptor"
    gif[6:10] = struct.pack("<HH", 12, 7)
    gif[11] = 2
    expected = np.empty((7, 12, 3), dtype=np.int64)
    expected[:] = palette[2]
    expected[:5, :9] = palette[np.asarray(small)]
    expect_pixels("background.gif", bytes(gif), expected, 0, "uncovered screen takes background colour 2")

    # WebP: lossless with alpha (exact pixels), lossy against Pillow's decode.
    rgba = pattern(9, 13, 4, 255, 100).astype(np.uint8)
    rgba[0, :, 3] = 0
    buffer = io.BytesIO()
    Image.fromarray(rgba, "RGBA").save(buffer, "WEBP", lossless=True, exact=True)
    expect_pixels("lossless.webp", buffer.getvalue(), rgba[:, :, :3], 0, "lossless, alpha dropped, RGB under it kept")
    smooth = smooth_rgb(24, 32)
    buffer = io.BytesIO()
    Image.fromarray(smooth).save(buffer, "WEBP", quality=80)
    pillow = np.asarray(Image.open(io.BytesIO(buffer.getvalue())).convert("RGB"))
    expect_pixels("lossy.webp", buffer.getvalue(), pillow, 0,
                  "lossy: Pillow decodes with the same libwebp, so its pixels are exact")
    buffer = io.BytesIO()
    Image.fromarray(smooth).save(buffer, "WEBP", save_all=True,
                                 append_images=[Image.fromarray(smooth[::-1].copy())], duration=100)
    expect_refusal("animated.webp", buffer.getvalue(), "unsupported", "animated WebP")

    # JPEG: Pillow's decoder (same libjpeg-turbo, same default IDCT and
    # upsampling) is the reference; exact, but allow 1 level for a library
    # build that rounds its IDCT differently.
    def jpeg(image, **options):
        buffer = io.BytesIO()
        image.save(buffer, "JPEG", **options)
        return buffer.getvalue()

    def pillow_upright(data):
        return np.asarray(ImageOps.exif_transpose(Image.open(io.BytesIO(data))).convert("RGB"))

    smooth = smooth_rgb(21, 34)
    for name, data in [("baseline.jpg", jpeg(Image.fromarray(smooth), quality=90)),
                       ("baseline444.jpg", jpeg(Image.fromarray(smooth), quality=90, subsampling=0)),
                       ("progressive.jpg", jpeg(Image.fromarray(smooth), quality=85, progressive=True)),
                       ("grey.jpg", jpeg(Image.fromarray(smooth[:, :, 0], "L"), quality=90))]:
        expect_pixels(name, data, pillow_upright(data), 1, "Pillow's libjpeg-turbo decode; 1 level for IDCT rounding")
    plain = jpeg(Image.fromarray(smooth), quality=90)
    for orientation in range(1, 9):
        for big_endian in (False, True):
            data = plain[:2] + exif_app1(orientation, big_endian) + plain[2:]
            name = f"exif{orientation}{'_mm' if big_endian else ''}.jpg"
            expect_pixels(name, data, pillow_upright(data), 1,
                          "EXIF orientation applied as Pillow's exif_transpose does; 1 level for IDCT rounding")
    # A progressive JPEG whose last scan repeats 600 times: past the 500-scan limit.
    progressive = jpeg(Image.fromarray(smooth), quality=85, progressive=True)
    last_scan = progressive.rindex(b"\xff\xda")
    end = progressive.rindex(b"\xff\xd9")
    expect_refusal("many_scans.jpg", progressive[:end] + progressive[last_scan:end] * 600 + progressive[end:], "format",
                   "more than 500 progressive scans", probe="ok")
    expect_refusal("cmyk.jpg", jpeg(Image.fromarray(smooth).convert("CMYK"), quality=90), "unsupported",
                   "colour is not supported", probe="refuse")

    # Hostile headers: sizes outside [1, 64·2^20] pixels, refused before allocating.
    tiny = np.zeros((1, 1, 3), dtype=np.int64)
    expect_refusal("huge.png", png_bytes(tiny, 2, 8, width=100000, height=100000), "format", "100000x100000")
    expect_refusal("over_bound.png", png_bytes(tiny, 2, 8, width=8193, height=8192), "format", "8193x8192")
    entries.append({"file": "at_bound.png", "expect": "probe_only", "width": 8192, "height": 8192})
    write("at_bound.png", png_bytes(tiny, 2, 8, width=8192, height=8192))
    expect_refusal("zero_width.png", png_bytes(tiny, 2, 8, width=0), "format", "zero_width.png")
    expect_refusal("huge.bmp", bmp_bytes(np.zeros((1, 1, 3)), width=100000, height=100000), "format", "100000x100000")
    gif = bytearray(open(f"{directory}/small.gif", "rb").read())
    gif[6:10] = struct.pack("<HH", 65535, 65535)
    expect_refusal("huge.gif", bytes(gif), "format", "65535x65535")
    gif[6:10] = struct.pack("<HH", 0, 5)
    expect_refusal("zero.gif", bytes(gif), "format", "0x5")
    gif[6:10] = struct.pack("<HH", 4, 5)  # the frame (9x5) is wider than the screen
    expect_refusal("frame_outside.gif", bytes(gif), "format", "inside", probe="ok")
    # VP8L: signature 0x2f, then 14 bits width-1, 14 bits height-1, alpha, version 0.
    bits = (16383) | (16383 << 14)
    vp8l = b"\x2f" + struct.pack("<I", bits) + b"\0" * 8
    expect_refusal("huge.webp", b"RIFF" + struct.pack("<I", 4 + 8 + len(vp8l)) + b"WEBP" + b"VP8L" +
                   struct.pack("<I", len(vp8l)) + vp8l, "format", "16384x16384")
    data = bytearray(plain)
    sof = data.index(b"\xff\xc0")
    data[sof + 5:sof + 9] = struct.pack(">HH", 65000, 65000)
    expect_refusal("huge.jpg", bytes(data), "format", "65000x65000")
    expect_refusal("empty.png", b"", "format", "empty")
    rng = np.random.default_rng(110)
    expect_refusal("random.bin", b"\x01" + bytes(rng.integers(0, 256, 4096, dtype=np.uint8)), "unsupported",
                   "not a PNG, JPEG, GIF, WebP or BMP")
    expect_refusal("random_after_magic.png", b"\x89PNG\r\n\x1a\n" + bytes(rng.integers(0, 256, 512, dtype=np.uint8)),
                   "format", "PNG")
    expect_refusal("targa.tga", b"\0\0\x02" + b"\0" * 15 + b"\xff" * 12, "unsupported", "not a PNG")

    with open(f"{directory}/manifest.json", "w") as f:
        json.dump(entries, f, indent=1)


# ---------------------------------------------------------------- patches

def grid(sw, sh, budget):
    """vision.md §2.2 in float64 (Python floats are float64)."""
    s = min(1.0, (budget / (sw * sh / 196.0)) ** 0.5)
    gw = max(int(np.floor(sw * s / 14 + 0.5)), 2)
    gh = max(int(np.floor(sh * s / 14 + 0.5)), 2)
    gw -= gw % 2
    gh -= gh % 2
    while gw * gh > budget and (gw > 2 or gh > 2):
        if gw >= gh and gw > 2:
            gw -= 2
        elif gh > 2:
            gh -= 2
        else:
            break
    return gw, gh


def resize(src, W, H, dtype):
    """§2.3's bilinear resize, every operation in `dtype`; src [sh][sw][3]."""
    sh, sw, _ = src.shape
    one, half = dtype(1), dtype(0.5)
    rx, ry = dtype(sw) / dtype(W), dtype(sh) / dtype(H)
    fx = (np.arange(W, dtype=dtype) + half) * rx - half
    fy = (np.arange(H, dtype=dtype) + half) * ry - half
    x0, y0 = np.floor(fx), np.floor(fy)
    wx, wy = (fx - x0)[None, :, None], (fy - y0)[:, None, None]
    x0, y0 = x0.astype(np.int64), y0.astype(np.int64)
    x1, y1 = np.clip(x0 + 1, 0, sw - 1), np.clip(y0 + 1, 0, sh - 1)
    x0, y0 = np.clip(x0, 0, sw - 1), np.clip(y0, 0, sh - 1)
    s = src.astype(dtype)
    a, b = s[y0][:, x0], s[y0][:, x1]
    c, d = s[y1][:, x0], s[y1][:, x1]
    return (one - wy) * ((one - wx) * a + wx * b) + wy * ((one - wx) * c + wx * d)  # [H][W][3]


def to_patches(v, mean, std, gw, gh, dtype):
    out = (v / dtype(255) - mean.astype(dtype)) / std.astype(dtype)  # [H][W][c]
    # [gh·14][gw·14][3] -> [gh][j][gw][i][c] -> [gh][gw][c][j][i] -> [L][588]
    return out.reshape(gh, 14, gw, 14, 3).transpose(0, 2, 4, 1, 3).reshape(gh * gw, 588)


def patches(case_path, out_path):
    """Each case: a JSON line {"rgb": file, "width", "height", "max_patches", "mean", "std"}.
    Writes per case: gw, gh (int64), then L·588 float64, then L·588 float32 (f32 emulated)."""
    with open(out_path, "wb") as out:
        for line in open(case_path):
            case = json.loads(line)
            sw, sh = case["width"], case["height"]
            src = np.frombuffer(open(case["rgb"], "rb").read(), dtype=np.uint8).reshape(sh, sw, 3)
            gw, gh = grid(sw, sh, case["max_patches"])
            mean, std = np.array(case["mean"], dtype=np.float32), np.array(case["std"], dtype=np.float32)
            exact = to_patches(resize(src, 14 * gw, 14 * gh, np.float64), mean, std, gw, gh, np.float64)
            single = to_patches(resize(src, 14 * gw, 14 * gh, np.float32), mean, std, gw, gh, np.float32)
            out.write(struct.pack("<qq", gw, gh))
            out.write(exact.astype("<f8").tobytes())
            out.write(single.astype("<f4").tobytes())


def grids(case_path, out_path):
    """Each line "sw sh budget" -> "gw gh"."""
    with open(out_path, "w") as out:
        for line in open(case_path):
            sw, sh, budget = map(int, line.split())
            out.write("%d %d\n" % grid(sw, sh, budget))


if __name__ == "__main__":
    {"make": make, "patches": patches, "grids": grids}[sys.argv[1]](*sys.argv[2:])
