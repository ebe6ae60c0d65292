// vision_stages.h — the per-patch arithmetic of the vision tower that is not
// a matmul (vision.md §3): the position-grid resize, the 2-D RoPE, one head
// of attention's softmax, the 2×2 merge and the two GELUs. Plain scalar loops in
// f32, written to be read next to the spec.
#pragma once

#include <cstddef>
#include <vector>

namespace waste::model::vision {

// §3.1: the stored grid G [pos_h][pos_w][D] resized to [gh][gw][D] by
// align_corners=False bilinear (height from pos_h/gh, width from pos_w/gw);
// the grid itself when the sizes match.
std::vector<float> resize_position_grid(const std::vector<float>& grid, int pos_h, int pos_w, int D, int gh, int gw);

// §3.2: cos and sin of every (patch, pair) angle, [L][hd/2] each; pair j
// of patch p turns by (j even ? column : row) · 10000^(−4·(j div 2)/hd).
struct RopeTable {
    int pairs = 0;
    std::vector<float> cos, sin;
};
RopeTable rope_table(int gh, int gw, int head_dim);
// Rotates the pairs of one head vector (hd values) of patch p.
void apply_rope(const RopeTable& table, size_t patch, float* v);

// §3.3, one head's probabilities in place: scores [L][L] (q·k, unscaled)
// become softmax over each row of score/sqrt(hd), the row max subtracted.
// Rows [row_begin, row_end).
void softmax_rows(float* scores, size_t L, int hd, size_t row_begin, size_t row_end);

// §3.4: Z [gh·gw][D] → M [(gh/2)·(gw/2)][4D], each cell top-left,
// top-right, bottom-left, bottom-right.
std::vector<float> merge_2x2(const std::vector<float>& z, int gh, int gw, int D);

float gelu_tanh(float z);  // encoder MLP
float gelu_erf(float z);   // projector

}  // namespace waste::model::vision
