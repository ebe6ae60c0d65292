// image_queue.cpp — see image_queue.h.
#include "runtime/image_queue.h"

#include <algorithm>

#include "platform/error.h"

namespace waste::runtime {

ImageQueue::ImageQueue(size_t width, int32_t pad, size_t max_rows) : width_(width), pad_(pad), max_rows_(max_rows) {
    WASTE_CHECK(width > 0 && pad >= 0);
}

size_t ImageQueue::add(std::span<const float> rows) {
    if (rows.empty() || rows.size() % width_ != 0)
        fail(WASTE_ERR_INVALID_ARGUMENT, "image embedding of {} floats is not a whole number of rows of {}", rows.size(), width_);
    if (images() >= max_queued_images)
        fail(WASTE_ERR_INVALID_ARGUMENT, "{} images are queued already, the most one prompt may hold; evaluate or clear them first",
             images());
    const size_t n = rows.size() / width_;
    if (this->rows() + n > max_rows_)
        fail(WASTE_ERR_BUDGET, "the image queue holds {} rows and this image needs {} more; the memory plan holds {}", this->rows(), n,
             max_rows_);
    rows_.insert(rows_.end(), rows.begin(), rows.end());
    image_rows_.push_back(n);
    return n;
}

std::vector<int32_t> ImageQueue::expand(std::span<const int32_t> tokens) const {
    const size_t pads = static_cast<size_t>(std::count(tokens.begin(), tokens.end(), pad_));
    if (pads != images())
        fail(WASTE_ERR_INVALID_ARGUMENT, "the prompt holds {} image pads (token {}) and {} images are queued; they must match", pads, pad_,
             images());
    std::vector<int32_t> out;
    out.reserve(tokens.size() - pads + rows());
    size_t image = 0;
    for (const int32_t token : tokens) {
        if (token != pad_) {
            out.push_back(token);
            continue;
        }
        out.insert(out.end(), image_rows_[image++], pad_);
    }
    return out;
}

void ImageQueue::clear() {
    rows_.clear();
    image_rows_.clear();
}

model::EmbeddingSplice* ImageQueue::begin_eval() {
    if (rows_.empty()) return nullptr;
    splice_ = model::EmbeddingSplice{pad_, rows_.data(), rows(), 0};
    return &splice_;
}

void ImageQueue::finish_eval() {
    if (splice_.next > 0) clear();
    splice_ = model::EmbeddingSplice{};
}

}  // namespace waste::runtime
