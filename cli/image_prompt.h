// image_prompt.h — `--image FILE` on the prompting commands (vision.md §4–§5):
// each image decoded and run through the tower into the session's queue, and
// the media block K3 was trained on in front of the prompt, one per image.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "waste/waste.h"

namespace waste_cli {

// The most --image files a prompt takes (the library's queue bound).
constexpr size_t max_prompt_images = 32;

// Adds each file to the session (reporting "[FILE: N image tokens]" on
// stderr) and returns the tokens of their media blocks, images first, in
// order — `<|media_begin|>image WxH<|media_content|><|media_pad|><|media_end|>`
// with the file's own size, tokenized in markup mode. The caller appends its
// prompt and expands the result (expand_image_pads) before evaluating.
std::vector<int32_t> add_prompt_images(waste_model* model, waste_session* session, const std::vector<std::string>& files);

// tokens with each pad replaced by its image's pads (waste_session_image_expand).
std::vector<int32_t> expand_image_pads(waste_session* session, const std::vector<int32_t>& tokens);

}  // namespace waste_cli
