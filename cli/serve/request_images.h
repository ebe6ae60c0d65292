// request_images.h — a chat request's images for a server with the vision
// tower (k3-chat.md §10, vision.md §4): each image_url read (base64 data:
// URLs; files only under --image-dir; never http), measured from its
// header, and counted in positions, before admission — so a bad image or a
// prompt over the context is a 400 at once. The tower itself runs on the
// slot's session when the generation starts (engine.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine.h"
#include "request_memory.h"

namespace waste_serve {

struct RequestImages {
    std::vector<std::string> bytes;   // each image's file bytes, in pad order
    nlohmann::json sizes;             // [[W, H], ...]: waste_chat_render_json's "image_sizes"
    std::vector<size_t> positions;    // each image's token count (waste_model_image_tokens)
};

// refs: the rendered request's "images"; image_dir: --image-dir ("" = no
// local files; waste_image_source_read_in_dir says which are read). Each
// image's bytes, held until the request's generation runs its tower (queued
// or not), are reserved in memory before they are read. Throws
// ApiError 400 naming the image and the reason (code invalid_image_url,
// image_url_not_fetched, local_images_disallowed, invalid_image); a local
// file's refusal never shows its contents.
RequestImages read_request_images(const Engine& engine, const nlohmann::json& refs, const std::string& image_dir,
                                  RequestMemory::Reservation& memory);

// ids with the k-th <|media_pad|> repeated positions[k] times (the library's
// expansion, done before the images are queued so the prompt's length is
// known at admission; engine.cpp checks the library agrees).
std::vector<int32_t> expand_image_pads(const Engine& engine, const std::vector<int32_t>& ids, const std::vector<size_t>& positions);

}  // namespace waste_serve
