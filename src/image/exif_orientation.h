// exif_orientation.h — the EXIF orientation tag of a JPEG's APP1 segment,
// and turning decoded pixels upright by it.
//
// Upstream (stb_image) ignores EXIF orientation; we apply it, so a phone
// photo reaches the tower the way its viewer shows it (docs/IMAGES.md). Only
// IFD0's tag 0x0112 is read; everything else in the segment is ignored.
#pragma once

#include <cstdint>
#include <string_view>

#include "image/image.h"

namespace waste::image {

// The orientation 1..8 in an APP1 payload that starts "Exif\0\0"; 1 (as
// stored) when the payload is not EXIF, is malformed anywhere on the way to
// the tag, or holds a value outside 1..8. Every offset is bounds-checked.
int exif_orientation(std::string_view app1_payload);

// Orientations 5..8 swap width and height.
inline bool orientation_swaps_sides(int orientation) { return orientation >= 5 && orientation <= 8; }

// The image turned upright: out(X, Y) = in(source(X, Y)) per EXIF's eight cases.
RgbImage apply_orientation(RgbImage image, int orientation);

}  // namespace waste::image
