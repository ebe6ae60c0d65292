// request_images.cpp — see request_images.h.
#include "request_images.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "api_error.h"

namespace waste_serve {

using nlohmann::json;

namespace {

// A data: URL's bytes are at most 3/4 of its text, and no image is over
// 64 MiB (waste.h).
constexpr uint64_t kMaxImageFileBytes = uint64_t{64} << 20;

}  // namespace

RequestImages read_request_images(const Engine& engine, const json& refs, const std::string& image_dir,
                                  RequestMemory::Reservation& memory) {
    RequestImages out;
    out.sizes = json::array();
    for (size_t i = 0; i < refs.size(); ++i) {
        const std::string ref = refs[i].is_string() ? refs[i].get<std::string>() : std::string();
        // The library's buffer and the copy kept here: reserved for the
        // most the image may be, then cut to what it is. A file may be as
        // large as this request can still hold (the library reads no more),
        // so a small pool still reads small files.
        const bool data_url = ref.size() >= 5 && std::equal(ref.begin(), ref.begin() + 5, "data:", [](char a, char b) {
            return std::tolower(static_cast<unsigned char>(a)) == b;
        });
        const uint64_t most = std::max<uint64_t>(1, std::min<uint64_t>(kMaxImageFileBytes, data_url ? ref.size() : memory.headroom() / 2));
        const uint64_t reserved = 2 * most;
        memory.grow(reserved, fmt::format("image {}", i + 1));
        char* bytes = nullptr;
        size_t size = 0;
        char* refusal = nullptr;
        waste_error error{};
        if (waste_image_source_read_in_dir(ref.data(), ref.size(), image_dir.empty() ? nullptr : image_dir.c_str(), data_url ? 0 : most,
                                           &bytes, &size, &refusal, &error) != WASTE_OK) {
            const json e = json::parse(refusal ? refusal : "{}", nullptr, false);
            waste_string_free(refusal);
            const std::string code = e.is_object() && e.contains("code") && e["code"].is_string() ? e["code"].get<std::string>()
                                                                                                   : "invalid_image_url";
            throw bad_request(fmt::format("image {}: {}", i + 1, error.message), "messages", code);
        }
        std::string image(bytes, size);
        waste_string_free(bytes);
        memory.shrink(reserved - std::min<uint64_t>(reserved, size));
        const std::string name = fmt::format("image {}", i + 1);
        uint32_t width = 0, height = 0;
        size_t positions = 0;
        if (waste_image_dimensions_bytes(image.data(), image.size(), name.c_str(), &width, &height, &error) != WASTE_OK ||
            waste_model_image_tokens(engine.model, width, height, &positions, &error) != WASTE_OK) {
            // A data: URL's bytes are the client's own, so the decoder's words
            // (which quote the first bytes) may be shown; a file's are not.
            throw bad_request(data_url ? std::string("an image cannot be read: ") + error.message
                                       : fmt::format("image {}: the file is not an image this server reads", i + 1),
                              "messages", "invalid_image");
        }
        out.bytes.push_back(std::move(image));
        out.sizes.push_back({width, height});
        out.positions.push_back(positions);
    }
    return out;
}

std::vector<int32_t> expand_image_pads(const Engine& engine, const std::vector<int32_t>& ids, const std::vector<size_t>& positions) {
    const int32_t pad = waste_tokenizer_special_id(engine.tokenizer, "<|media_pad|>");
    std::vector<int32_t> out;
    size_t image = 0;
    for (const int32_t id : ids) {
        if (id != pad || pad < 0) {
            out.push_back(id);
            continue;
        }
        if (image >= positions.size())
            throw ApiError{500, "the rendered prompt holds more image pads than the request has images", "engine_error", "", "engine_error"};
        out.insert(out.end(), positions[image++], pad);
    }
    if (image != positions.size())
        throw ApiError{500, "the rendered prompt holds fewer image pads than the request has images", "engine_error", "", "engine_error"};
    return out;
}

}  // namespace waste_serve
