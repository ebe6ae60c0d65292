#include "model/decoded_experts.h"

#include <algorithm>

#include "model/moe_experts.h"

namespace waste::model {

size_t DecodedExpert::bytes(size_t lat, size_t inter) {
    return 2 * kernels::int8_matrix_bytes(inter, lat) + kernels::int8_matrix_bytes(lat, inter);
}

DecodedExpert::DecodedExpert(size_t lat, size_t inter) : buffer_(bytes(lat, inter)) {
    uint8_t* next = buffer_.data();
    gate = kernels::int8_matrix_view(next, inter, lat);
    next += kernels::int8_matrix_bytes(inter, lat);
    up = kernels::int8_matrix_view(next, inter, lat);
    next += kernels::int8_matrix_bytes(inter, lat);
    down = kernels::int8_matrix_view(next, lat, inter);
}

void DecodedExpert::decode(platform::ThreadPool& pool, const ExpertBooks& books, const uint8_t* record,
                           const format::ExpertLayout& layout) {
    const size_t gate_off = layout.gate_off, up_off = layout.up_off, down_off = layout.down_off, scales_off = layout.scales_off;
    const kernels::Isa isa = kernels::active_isa();
    const size_t inter = gate.rows, lat = down.rows;
    const uint8_t* scales = record + scales_off;
    // gate rows [0, I), up rows [I, 2I), down rows [2I, 2I + lat) in one region
    pool.parallel_for(2 * inter + lat, [&](size_t begin, size_t end) {
        const auto part = [&](size_t first, size_t count, auto&& run) {
            const size_t b = std::max(begin, first), e = std::min(end, first + count);
            if (b < e) run(b - first, e - first);
        };
        part(0, inter, [&](size_t b, size_t e) {
            kernels::decode_vq_int8_rows(isa, books.in_shape, books.packed6, record + gate_off, scales, books.gate, gate, b, e);
        });
        part(inter, inter, [&](size_t b, size_t e) {
            kernels::decode_vq_int8_rows(isa, books.in_shape, books.packed6, record + up_off, scales + 2 * inter, books.up, up, b, e);
        });
        part(2 * inter, lat, [&](size_t b, size_t e) {
            kernels::decode_vq_int8_rows(isa, books.down_shape, books.packed6, record + down_off, scales + 4 * inter, books.down,
                                         down, b, e);
        });
    }, 16);
}

const DecodedExpert* DecodedExperts::find(int layer, int expert) const {
    std::lock_guard lock(mutex_);
    const auto it = held_.find(key(layer, expert));
    return it == held_.end() ? nullptr : it->second.get();
}

bool DecodedExperts::has_room(size_t bytes) const {
    std::lock_guard lock(mutex_);
    return used_ + bytes <= capacity_;
}

const DecodedExpert* DecodedExperts::insert(int layer, int expert, std::unique_ptr<DecodedExpert>& decoded, size_t bytes) {
    std::lock_guard lock(mutex_);
    const auto it = held_.find(key(layer, expert));
    if (it != held_.end()) return it->second.get();
    if (used_ + bytes > capacity_) return nullptr;
    used_ += bytes;
    return held_.emplace(key(layer, expert), std::move(decoded)).first->second.get();
}

const DecodedExpert* DecodedExperts::hold(platform::ThreadPool& pool, const ExpertBooks& books, const format::ExpertLayout& layout,
                                          int layer, int expert, const uint8_t* record, size_t lat, size_t inter) {
    if (const DecodedExpert* held = find(layer, expert)) return held;
    const size_t bytes = DecodedExpert::held_bytes(lat, inter);
    if (!has_room(bytes)) return nullptr;
    auto fresh = std::make_unique<DecodedExpert>(lat, inter);
    fresh->decode(pool, books, record, layout);
    return insert(layer, expert, fresh, bytes);
}

uint64_t DecodedExperts::held() const {
    std::lock_guard lock(mutex_);
    return held_.size();
}

uint64_t DecodedExperts::held_bytes() const {
    std::lock_guard lock(mutex_);
    return used_;
}

}  // namespace waste::model
