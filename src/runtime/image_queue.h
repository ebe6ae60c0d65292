// image_queue.h — a session's queued image embeddings (vision.md §4–§5).
//
// An image's rows (its projector output, one text-width row per image token)
// wait here until the evaluation that reaches their pads. The prompt carries
// one pad per image; expand() turns each into as many pads as its image has
// rows, and during evaluation each pad position takes the next queued row in
// place of the embedding table's (model::EmbeddingSplice). The evaluation
// that used a row clears the whole queue; one that met no pad leaves it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "model/forward.h"

namespace waste::runtime {

// Upstream's bound on queued images (vision.md §5), kept for compatibility.
constexpr size_t max_queued_images = 32;

class ImageQueue {
public:
    // width: the text model's hidden size; pad: the media placeholder id;
    // max_rows: how many rows the memory plan holds for the queue.
    ImageQueue(size_t width, int32_t pad, size_t max_rows);

    // Appends one image's rows ([n][width], n >= 1); returns n. Beyond
    // max_queued_images or max_rows the queue is left as it was and the
    // call fails (WASTE_ERR_INVALID_ARGUMENT / WASTE_ERR_BUDGET).
    size_t add(std::span<const float> rows);
    // Each pad of tokens replaced by as many pads as its image has rows, in
    // queue order. The pads must be as many as the queued images.
    std::vector<int32_t> expand(std::span<const int32_t> tokens) const;
    void clear();

    size_t images() const { return image_rows_.size(); }
    size_t rows() const { return rows_.size() / width_; }
    int32_t pad() const { return pad_; }

    // For one evaluation: the splice over the queued rows, then finish(),
    // which clears the queue when the evaluation used a row of it.
    model::EmbeddingSplice* begin_eval();
    void finish_eval();

private:
    size_t width_;
    int32_t pad_;
    size_t max_rows_;
    std::vector<float> rows_;           // [rows][width], all images in order
    std::vector<size_t> image_rows_;    // rows per image, in order
    model::EmbeddingSplice splice_;
};

}  // namespace waste::runtime
