// image_source.cpp — see image_source.h.
#include "chat/image_source.h"

#include <cctype>

#include <fmt/format.h>

#include "chat/chat_request.h"
#include "platform/error.h"
#include "platform/direct_file.h"
#include "text/base64.h"

namespace waste::chat {
namespace {

// A reference quoted in an error message: enough to recognise, never a whole
// data: URL (megabytes) or control characters.
std::string quoted(std::string_view ref) {
    std::string out;
    for (const char c : ref.substr(0, 48)) out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? '?' : c;
    if (ref.size() > 48) out += "...";
    return "\"" + out + "\"";
}

bool starts_with_nocase(std::string_view text, std::string_view prefix) {
    if (text.size() < prefix.size()) return false;
    for (size_t i = 0; i < prefix.size(); ++i)
        if (std::tolower(static_cast<unsigned char>(text[i])) != prefix[i]) return false;
    return true;
}

std::string decode_data_url(std::string_view ref) {
    const size_t comma = ref.find(',');
    if (comma == std::string_view::npos)
        throw RequestError(fmt::format("image URL {} is a data: URL without a comma before its data", quoted(ref)), "messages",
                           "invalid_image_url");
    const std::string_view header = ref.substr(5, comma - 5);  // after "data:"
    if (header.size() < 7 || !starts_with_nocase(header.substr(header.size() - 7), ";base64"))
        throw RequestError(fmt::format("image URL {} is a data: URL that is not base64 (\";base64,\" expected)", quoted(ref)),
                           "messages", "invalid_image_url");
    const std::string_view data = ref.substr(comma + 1);
    if (data.size() / 4 * 3 > max_image_file_bytes)
        throw RequestError(fmt::format("the image in data: URL {} is over {} bytes", quoted(ref), max_image_file_bytes), "messages",
                           "invalid_image");
    std::string bytes;
    if (!text::decode_base64(data, bytes))
        throw RequestError(fmt::format("image URL {} does not hold valid base64 after its comma", quoted(ref)), "messages",
                           "invalid_image_url");
    return bytes;
}

std::string read_local(std::string_view path, std::string_view ref) {
    try {
        return platform::read_small_file(std::string(path), max_image_file_bytes);
    } catch (const Error& e) {
        throw RequestError(fmt::format("image {} cannot be read: {}", quoted(ref), e.what()), "messages", "invalid_image");
    }
}

}  // namespace

std::string read_image_source(std::string_view ref, bool allow_local_files) {
    if (starts_with_nocase(ref, "data:")) return decode_data_url(ref);
    if (starts_with_nocase(ref, "http://") || starts_with_nocase(ref, "https://"))
        throw RequestError(fmt::format("image URL {} is not fetched: send the image as a base64 data: URL", quoted(ref)),
                           "messages", "image_url_not_fetched");
    const bool file_url = starts_with_nocase(ref, "file://");
    const std::string_view path = file_url ? ref.substr(7) : ref;
    const bool plain_path = !path.empty() && path.find("://") == std::string_view::npos && path.find('\0') == std::string_view::npos;
    if (!plain_path)
        throw RequestError(fmt::format("image reference {} is not a base64 data: URL", quoted(ref)), "messages", "invalid_image_url");
    if (!allow_local_files)
        throw RequestError(fmt::format("image {} names a file on the server, which this server does not allow "
                                       "(--allow-local-images); send it as a base64 data: URL",
                                       quoted(ref)),
                           "messages", "local_images_disallowed");
    return read_local(path, ref);
}

}  // namespace waste::chat
