// image_source.h — the bytes of a request's image (k3-chat.md §10): a base64
// `data:` URL, or — only where the caller allows local files — a path or a
// `file://` URL. `http://` and `https://` URLs are never fetched: the server
// would be making requests to addresses its clients choose.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace waste::chat {

// The largest image file read or decoded from a data: URL (an 8K PNG of
// noise is ~100 MB, a photo a few MB): bounded before it is read.
inline constexpr uint64_t max_image_file_bytes = uint64_t{64} << 20;

// Throws RequestError (param "messages") with code "invalid_image_url" (not a
// base64 data: URL, a path, or a file: URL; or bad base64), "image_url_not_fetched"
// (http/https), "local_images_disallowed" (a path or file: URL without
// allow_local_files), or "invalid_image" (a file that cannot be read or is
// larger than max_image_file_bytes).
std::string read_image_source(std::string_view ref, bool allow_local_files);

}  // namespace waste::chat
