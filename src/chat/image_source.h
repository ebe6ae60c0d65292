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

// Which files on this machine a reference may name.
struct LocalImages {
    bool any = false;     // every path the process can read (the CLI's own --image)
    std::string dir;      // else, when not empty: only regular files under this directory
    // The largest file read (a server passes what a request may still hold);
    // never more than max_image_file_bytes.
    uint64_t max_file_bytes = max_image_file_bytes;
};

// Throws RequestError (param "messages") with code "invalid_image_url" (not a
// base64 data: URL, a path, or a file: URL; or bad base64), "image_url_not_fetched"
// (http/https), "local_images_disallowed" (a path or file: URL where no local
// file is allowed), or "invalid_image" (a file that cannot be read or is
// larger than local.max_file_bytes; not a regular file).
//
// Under local.dir, a path (relative ones from the directory) is resolved —
// links followed, "." and ".." removed — and read only if the result lies
// under the directory's own resolved path and is a regular file, opened
// without blocking (a FIFO or device never holds the reader) and checked
// before a byte is read. A path that does not resolve under the directory
// is "local_images_disallowed" with the same words whether or not it exists,
// and no refusal quotes a file's contents.
std::string read_image_source(std::string_view ref, const LocalImages& local);

// The directory as read_image_source compares paths with it (resolved); throws
// WASTE_ERR_INVALID_ARGUMENT naming it when it is not a directory.
std::string resolve_image_dir(const std::string& dir);

}  // namespace waste::chat
