#include "model/vision_tower.h"

#include <algorithm>
#include <cmath>

#include "kernels/elementwise.h"
#include "kernels/trunk_matmul.h"
#include "model/vision_attention.h"
#include "model/vision_stages.h"
#include "platform/error.h"

namespace waste::model {
namespace {

// Y = W X for every patch: x [L][cols], y [L][rows].
void project(platform::ThreadPool& pool, const format::LoadedTensor& w, const std::vector<float>& x, size_t L,
             std::vector<float>& y) {
    y.resize(L * w.info->rows);
    kernels::matmul(pool, w, x.data(), w.info->cols, L, y.data(), w.info->rows);
}

void rms_rows(const std::vector<float>& x, const std::vector<float>& w, float eps, size_t rows, std::vector<float>& out) {
    const size_t n = w.size();
    out.resize(rows * n);
    for (size_t r = 0; r < rows; ++r) kernels::rmsnorm(kernels::active_isa(), &x[r * n], w.data(), eps, n, &out[r * n]);
}

// v[i] = f(v[i]), split over the pool (each element on its own: same bits
// at any thread count). The tanh GELU runs over L × I values per block.
void map_values(platform::ThreadPool& pool, std::vector<float>& v, float (*f)(float)) {
    pool.parallel_for(v.size(), [&](size_t begin, size_t end) {
        for (size_t i = begin; i < end; ++i) v[i] = f(v[i]);
    }, 1024);
}

}  // namespace

const format::LoadedTensor* VisionTower::matrix(const format::VisionTensorSpec& spec) {
    const format::LoadedTensor& stored = tensors_.tensors.at(spec.name);
    format::TrunkTensor& shape = shapes_.emplace_back(*stored.info);
    shape.shape = {spec.rows, spec.cols};  // same bytes: check_vision_tensors allows another shape only for F32
    format::derive_trunk_layout(shape, "vision tensor " + spec.name);
    return &matrices_.emplace_back(format::LoadedTensor{&shape, stored.payload, stored.scales});
}

std::unique_ptr<VisionTower> VisionTower::load(const format::Container& container, const format::VisionConfig& config) {
    format::check_vision_tensors(container.manifest(), config);
    const std::vector<format::VisionTensorSpec> specs = format::vision_tensor_specs(config);
    std::vector<std::string> names;
    for (const format::VisionTensorSpec& spec : specs) names.push_back(spec.name);
    std::unique_ptr<VisionTower> tower(new VisionTower());
    tower->config_ = config;
    tower->tensors_ = container.load_tensors(names);
    auto vector = [&](const std::string& name) { return tower->tensors_.tensors.at(name).dequantize(); };
    // The spec table's order: patch embedding, grid, per block (norm0, wqkv,
    // wo, norm1, fc0, fc1), final norm, proj.0, proj.2, post_norm.
    size_t i = 0;
    tower->patch_embed_ = tower->matrix(specs[i++]);
    tower->pos_grid_ = vector(specs[i++].name);
    for (int b = 0; b < config.blocks; ++b) {
        VisionBlockWeights w;
        w.norm0 = vector(specs[i++].name);
        w.wqkv = tower->matrix(specs[i++]);
        w.wo = tower->matrix(specs[i++]);
        w.norm1 = vector(specs[i++].name);
        w.fc0 = tower->matrix(specs[i++]);
        w.fc1 = tower->matrix(specs[i++]);
        tower->blocks_.push_back(std::move(w));
    }
    tower->final_norm_ = vector(specs[i++].name);
    tower->proj0_ = tower->matrix(specs[i++]);
    tower->proj2_ = tower->matrix(specs[i++]);
    tower->post_norm_ = vector(specs[i++].name);
    WASTE_CHECK(i == specs.size());
    return tower;
}

uint64_t VisionTower::weight_bytes(const format::Container& container, const format::VisionConfig& c) {
    std::vector<std::string> names;
    for (const format::VisionTensorSpec& spec : format::vision_tensor_specs(c)) names.push_back(spec.name);
    return container.tensors_bytes(names);
}

uint64_t VisionTower::planned_bytes(const format::Container& container, const format::VisionConfig& c) {
    uint64_t f32_copies = static_cast<uint64_t>(c.pos_h) * c.pos_w * c.hidden;  // the position grid
    for (const format::VisionTensorSpec& spec : format::vision_tensor_specs(c))
        if (spec.norm) f32_copies += static_cast<uint64_t>(spec.rows);
    const uint64_t L = static_cast<uint64_t>(c.max_patches), N = L / 4, D = c.hidden, Q = c.qkv, I = c.intermediate,
                   TH = c.text_hidden, hd = static_cast<uint64_t>(c.head_dim());
    // embed()'s vectors at L = max_patches: pixels, x, pos, y, qkv, attended,
    // delta (L·D or N·TH), hidden (L·I or N·4D), merged, e; the RoPE table;
    // attention's per-head q/k/v gathers, a block of scores and its output.
    const uint64_t floats = L * format::vision_patch_values + 3 * L * D + 3 * L * Q + L * Q + std::max(L * D, N * TH) +
                            std::max(L * I, N * 4 * D) + N * 4 * D + N * TH + L * hd + 4 * L * hd +
                            vision::query_block(L) * L + vision::query_block(L) * hd;
    return weight_bytes(container, c) + 4 * (f32_copies + floats);
}

std::vector<float> VisionTower::embed(platform::ThreadPool& pool, std::span<const float> pixels, int gh, int gw) const {
    const format::VisionConfig& c = config_;
    if (gh < 2 || gw < 2 || gh % 2 || gw % 2 || static_cast<int64_t>(gh) * gw > c.max_patches)
        fail(WASTE_ERR_INVALID_ARGUMENT, "vision tower: patch grid {}x{} must have even sides >= 2 and at most max_patches {} "
             "patches", gh, gw, c.max_patches);
    const size_t L = static_cast<size_t>(gh) * gw, D = c.hidden, Q = c.qkv;
    const int hd = c.head_dim();
    if (pixels.size() != L * format::vision_patch_values)
        fail(WASTE_ERR_INVALID_ARGUMENT, "vision tower: {} pixel values for a {}x{} grid, expected {}", pixels.size(), gh, gw,
             L * format::vision_patch_values);

    // §3.1: patch embedding plus the (resized) position grid.
    std::vector<float> x(L * D);
    kernels::matmul(pool, *patch_embed_, pixels.data(), format::vision_patch_values, L, x.data(), D);
    const std::vector<float> pos = vision::resize_position_grid(pos_grid_, c.pos_h, c.pos_w, c.hidden, gh, gw);
    for (size_t i = 0; i < x.size(); ++i) x[i] += pos[i];

    const vision::RopeTable rope = vision::rope_table(gh, gw, hd);
    std::vector<float> y, qkv, attended, delta, hidden;
    for (const VisionBlockWeights& w : blocks_) {
        // §3.3 attention: packed q, k, v; RoPE on q and k; every head over all patches.
        rms_rows(x, w.norm0, format::vision_tower_eps, L, y);
        project(pool, *w.wqkv, y, L, qkv);
        for (size_t p = 0; p < L; ++p)
            for (int h = 0; h < c.heads; ++h) {
                vision::apply_rope(rope, p, &qkv[p * 3 * Q + static_cast<size_t>(h) * hd]);
                vision::apply_rope(rope, p, &qkv[p * 3 * Q + Q + static_cast<size_t>(h) * hd]);
            }
        vision::attend(pool, qkv, L, Q, c.heads, hd, vision::query_block(L), attended);
        project(pool, *w.wo, attended, L, delta);
        for (size_t i = 0; i < x.size(); ++i) x[i] += delta[i];
        // MLP: fc0 → tanh GELU → fc1.
        rms_rows(x, w.norm1, format::vision_tower_eps, L, y);
        project(pool, *w.fc0, y, L, hidden);
        map_values(pool, hidden, vision::gelu_tanh);
        project(pool, *w.fc1, hidden, L, delta);
        for (size_t i = 0; i < x.size(); ++i) x[i] += delta[i];
    }
    rms_rows(x, final_norm_, format::vision_tower_eps, L, y);

    // §3.4–3.5: 2×2 merge, projector proj.0 → erf GELU → proj.2 → post_norm.
    const size_t N = L / 4;
    const std::vector<float> merged = vision::merge_2x2(y, gh, gw, c.hidden);
    project(pool, *proj0_, merged, N, hidden);
    map_values(pool, hidden, vision::gelu_erf);
    project(pool, *proj2_, hidden, N, delta);
    std::vector<float> e;
    rms_rows(delta, post_norm_, format::vision_projector_eps, N, e);
    return e;
}

}  // namespace waste::model
