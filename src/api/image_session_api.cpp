// image_session_api.cpp — images in a session (vision.md §4–§5): decode,
// preprocess, the tower at once, the rows queued; expanding a prompt's pads.
#include <cstdlib>
#include <cstring>
#include <string>

#include "api/api_support.h"
#include "api/session_handle.h"
#include "image/image.h"
#include "image/patches.h"
#include "platform/direct_file.h"
#include "runtime/image_queue.h"

using waste::api::guarded;

namespace {

waste::runtime::ImageQueue& queue_of(waste_session* session, const char* what) {
    if (!session) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "{}: session is required", what);
    waste::runtime::ImageQueue* queue = session->session->images();
    if (!queue || !session->model->vision)
        waste::fail(WASTE_ERR_UNSUPPORTED, "{}: the model was opened without its vision tower (waste_open_options.vision, --vision)",
                    what);
    return *queue;
}

// Decode → patches → tower → queue. The pixels are freed before the tower
// runs, as the memory plan assumes (a decode and a tower pass never overlap).
size_t add_image(waste_session* session, const std::string& bytes, const std::string& name, const char* what) {
    waste::runtime::ImageQueue& queue = queue_of(session, what);
    if (queue.images() >= waste::runtime::max_queued_images)
        waste::fail(WASTE_ERR_INVALID_ARGUMENT, "{}: {} images are queued already, the most one prompt may hold", what,
                    queue.images());
    const waste::model::VisionTower& tower = *session->model->vision;
    const waste::format::VisionConfig& config = tower.config();
    waste::image::PatchTensor patches;
    {
        const waste::image::RgbImage image = waste::image::decode_image(bytes, name);
        waste::image::Normalisation normalisation;
        normalisation.mean = config.mean;
        normalisation.std = config.std;
        patches = waste::image::image_to_patches(image, static_cast<uint32_t>(config.max_patches), normalisation);
    }
    const std::vector<float> rows = tower.embed(session->session->pool(), patches.pixels, static_cast<int>(patches.grid.height),
                                                static_cast<int>(patches.grid.width));
    return queue.add(rows);
}

}  // namespace

extern "C" {

waste_status waste_model_image_tokens(const waste_model* model, uint32_t width, uint32_t height, size_t* out_tokens, waste_error* error) {
    return guarded(error, [&] {
        if (out_tokens) *out_tokens = 0;
        if (!model || !out_tokens) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_model_image_tokens: model and out_tokens are required");
        if (!model->vision)
            waste::fail(WASTE_ERR_UNSUPPORTED, "waste_model_image_tokens: the model was opened without its vision tower");
        if (width < 1 || height < 1 || static_cast<uint64_t>(width) * height > waste::image::max_pixels)
            waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_model_image_tokens: {}x{} is outside 1 to {} pixels", width, height,
                        waste::image::max_pixels);
        const auto grid = waste::image::patch_grid(width, height, static_cast<uint32_t>(model->vision->config().max_patches));
        *out_tokens = static_cast<size_t>(grid.width) * grid.height / 4;
    });
}

waste_status waste_session_image_add(waste_session* session, const void* bytes, size_t size, const char* name,
                                     size_t* out_tokens, waste_error* error) {
    return guarded(error, [&] {
        if (out_tokens) *out_tokens = 0;
        if (!bytes && size) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_session_image_add: bytes are required");
        if (size > waste::image::max_file_bytes)
            waste::fail(WASTE_ERR_FORMAT, "{}: {} bytes, more than an image may hold ({})", name ? name : "image", size,
                        waste::image::max_file_bytes);
        const size_t n = add_image(session, std::string(static_cast<const char*>(bytes), size), name ? name : "image",
                                   "waste_session_image_add");
        if (out_tokens) *out_tokens = n;
    });
}

waste_status waste_session_image_add_file(waste_session* session, const char* path, size_t* out_tokens, waste_error* error) {
    return guarded(error, [&] {
        if (out_tokens) *out_tokens = 0;
        if (!path) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_session_image_add_file: path is required");
        queue_of(session, "waste_session_image_add_file");  // refuse before reading a file that cannot be used
        const size_t n = add_image(session, waste::platform::read_small_file(path, waste::image::max_file_bytes), path,
                                   "waste_session_image_add_file");
        if (out_tokens) *out_tokens = n;
    });
}

waste_status waste_session_image_expand(const waste_session* session, const int32_t* tokens, size_t count, int32_t** out_tokens,
                                        size_t* out_count, waste_error* error) {
    return guarded(error, [&] {
        if (out_tokens) *out_tokens = nullptr;
        if (out_count) *out_count = 0;
        if (!out_tokens || !out_count || (!tokens && count))
            waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_session_image_expand: tokens, out_tokens and out_count are required");
        const auto& queue = queue_of(const_cast<waste_session*>(session), "waste_session_image_expand");
        const std::vector<int32_t> expanded = queue.expand(std::span<const int32_t>(tokens, count));
        if (expanded.empty()) return;
        auto* copy = static_cast<int32_t*>(std::malloc(expanded.size() * sizeof(int32_t)));
        if (!copy) throw std::bad_alloc();
        std::memcpy(copy, expanded.data(), expanded.size() * sizeof(int32_t));
        *out_tokens = copy;
        *out_count = expanded.size();
    });
}

waste_status waste_session_image_clear(waste_session* session, waste_error* error) {
    return guarded(error, [&] { queue_of(session, "waste_session_image_clear").clear(); });
}

void waste_session_image_queue(const waste_session* session, size_t* out_images, size_t* out_rows) {
    const waste::runtime::ImageQueue* queue = session ? session->session->images() : nullptr;
    if (out_images) *out_images = queue ? queue->images() : 0;
    if (out_rows) *out_rows = queue ? queue->rows() : 0;
}

}  // extern "C"
