// image_source.cpp — see image_source.h.
#include "chat/image_source.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include <fmt/format.h>

#include "chat/chat_request.h"
#include "platform/error.h"
#include "platform/direct_file.h"
#include "platform/utf8_path.h"
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

uint64_t file_bound(const LocalImages& local) { return std::min(local.max_file_bytes, max_image_file_bytes); }

std::string read_local(std::string_view path, std::string_view ref, uint64_t most) {
    try {
        return platform::read_small_file(std::string(path), most);
    } catch (const Error& e) {
        throw RequestError(fmt::format("image {} cannot be read: {}", quoted(ref), e.what()), "messages", "invalid_image");
    }
}

// A file under `dir` (resolved): see image_source.h. The refusals for paths
// outside it name neither the reason nor whether anything is there.
std::string read_under(const std::string& dir, std::string_view path, std::string_view ref, uint64_t most) {
    namespace fs = std::filesystem;
    const auto not_allowed = [&] {
        return RequestError(fmt::format("image {} is not allowed: only files under the server's image directory are read",
                                        quoted(ref)),
                            "messages", "local_images_disallowed");
    };
    std::error_code error;
    const fs::path named = platform::utf8_path(std::string(path));
    const fs::path resolved = fs::canonical(named.is_absolute() ? named : platform::utf8_path(dir) / named, error);
    if (error) throw not_allowed();
    const fs::path base = platform::utf8_path(dir);
    const auto [base_end, unused] = std::mismatch(base.begin(), base.end(), resolved.begin(), resolved.end());
    if (base_end != base.end() || resolved == base) throw not_allowed();
    try {
        // open_for_reading opens without blocking and refuses what is not a regular file
        return platform::read_small_file(platform::utf8_text(resolved), most);
    } catch (const Error& e) {
        const bool too_big = std::string_view(e.what()).find("more than") != std::string_view::npos;
        throw RequestError(fmt::format("image {} is not an image file{}", quoted(ref),
                                       too_big ? fmt::format(" this server reads (over {} bytes)", most) : " (not a readable regular file)"),
                           "messages", "invalid_image");
    }
}

}  // namespace

std::string resolve_image_dir(const std::string& dir) {
    std::error_code error;
    const std::filesystem::path resolved = std::filesystem::canonical(platform::utf8_path(dir), error);
    if (error || !std::filesystem::is_directory(resolved, error))
        fail(WASTE_ERR_INVALID_ARGUMENT, "image directory {} is not a directory", dir);
    return platform::utf8_text(resolved);
}

std::string read_image_source(std::string_view ref, const LocalImages& local) {
    if (starts_with_nocase(ref, "data:")) return decode_data_url(ref);
    if (starts_with_nocase(ref, "http://") || starts_with_nocase(ref, "https://"))
        throw RequestError(fmt::format("image URL {} is not fetched: send the image as a base64 data: URL", quoted(ref)),
                           "messages", "image_url_not_fetched");
    const bool file_url = starts_with_nocase(ref, "file://");
    const std::string_view path = file_url ? ref.substr(7) : ref;
    const bool plain_path = !path.empty() && path.find("://") == std::string_view::npos && path.find('\0') == std::string_view::npos;
    if (!plain_path)
        throw RequestError(fmt::format("image reference {} is not a base64 data: URL", quoted(ref)), "messages", "invalid_image_url");
    if (local.any) return read_local(path, ref, file_bound(local));
    if (!local.dir.empty()) return read_under(local.dir, path, ref, file_bound(local));
    throw RequestError(fmt::format("image {} names a file on the server, which this server does not allow "
                                   "(--image-dir); send it as a base64 data: URL",
                                   quoted(ref)),
                       "messages", "local_images_disallowed");
}

}  // namespace waste::chat
