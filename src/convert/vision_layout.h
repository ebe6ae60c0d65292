// vision_layout.h — K3's vision tower in a release checkpoint (vision.md §1):
// which tensors it must hold with which shapes, how each is stored in the
// container, and the vision.json the engine reads.
//
// The tower is converted when the release's config.json has a
// `vision_config` and the checkpoint holds `vision_tower.patch_embed.proj.weight`;
// then every tower and projector tensor must be there. Names are kept (they
// live outside the text `tensor_prefix`, so a text-only run never loads
// them). Stored shapes are flattened by use — the conv kernel
// [D, 3, 14, 14] as [D, 588], the position grid [h, w, D] as [h·w, D] — so
// that a quantisation group runs along the matmul's input (vision.md §1.2);
// formats follow format::converter_trunk_format (Q8G, F32 for the norms).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "convert/kimi_layout.h"
#include "convert/weight_source.h"

namespace waste::convert {

// The patch budget the converter writes into vision.json (vision.md §1.1).
inline constexpr int64_t vision_max_patches = 1024;

struct VisionPlan {
    bool present = false;
    ConvertUnit unit;                    // id "vision": the tower and projector, stored shapes
    nlohmann::ordered_json vision_json;  // the container's vision.json
    std::vector<std::string> warnings;   // e.g. no preprocessor_config.json: the values used
    std::string note;                    // why there is no tower, when there is none
};

// release_config: config.json as read; text_hidden: the text model's hidden
// size; source_dir: where preprocessor_config.json may be ("" = none).
// Throws WASTE_ERR_FORMAT naming the key, or the tensor, its shape and the
// shape the config implies.
VisionPlan plan_vision_conversion(const nlohmann::ordered_json& release_config, int64_t text_hidden,
                                  const WeightSource& source, const std::string& source_dir);

}  // namespace waste::convert
