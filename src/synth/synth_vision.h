// synth_vision.h — the optional vision tower of a synthetic container
// (override "vision": true, or an object of vision.json keys over the tiny
// tower's): vision.json and the tower's tensor plans.
//
// The tiny tower is deliberately awkward, so that a reader's shortcut shows:
// Q ≠ D, a small head dim (hd 12, a multiple of 4 only), rows shorter than a
// quantisation group (D 40 < 128) and longer than one with a padded tail
// (588, 160), a non-square position grid (6 rows × 4 columns, even so that
// an image may use it unresized, taller than wide so that a height/width
// swap shows; stored F32 as [6, 4, D]: the 3-D form an F32 tensor may
// keep), Q8G group 128 with subnormal f16 scales on the whole first row of
// every matrix (a reader flushing them to zero is visibly off), F32 norms,
// two blocks.
// Values as synth_tensors.h's: projections ~ N(0, 1/fan_in), the residual
// writers (wo, fc1) further by 1/sqrt(blocks), norms 1 ± 0.1.
#pragma once

#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "format/model_config.h"
#include "synth/synth_tensors.h"

namespace waste::synth {

// vision.json for the override `request` (true or an object of keys), the
// text model `model` and the placeholder id the preset chose (-1: the last
// id); throws WASTE_ERR_INVALID_ARGUMENT naming a bad key.
nlohmann::ordered_json synth_vision_json(const nlohmann::json& request, const format::ModelConfig& model,
                                         int64_t placeholder);

// Appends the tower's tensors (vision.md §1.2) for that vision.json.
void plan_vision(const nlohmann::ordered_json& vision, const format::ModelConfig& model, std::vector<TensorPlan>& out);

}  // namespace waste::synth
