// decoded_experts.h — routed experts held decoded into int8 rows for the
// int8 mode's prefill (kernels/int8_matmul.h), shared by an engine's
// sessions. Decoding costs more than one chunk's exact product
// (docs/bench-log/llama-cpp-kimi.md, "int8 rows in prefill"), so an expert
// is decoded once and kept while the memory plan gives room: only what the
// budget has left after the expert cache holds every record
// (MemoryPlan::decoded_bytes). An expert that does not fit is decoded into
// the session's workspace for each chunk instead — the same bytes, so
// placement never changes a bit.
//
// Entries are never evicted or changed once published (pointers stay valid
// for the store's life); find and insert take a mutex, the products none.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "format/expert_record.h"
#include "kernels/int8_matmul.h"
#include "platform/aligned_vector.h"
#include "platform/thread_pool.h"

namespace waste::model {

struct ExpertBooks;

// One expert's gate, up and down matrices as int8 rows, in one buffer.
class DecodedExpert {
public:
    DecodedExpert(size_t lat, size_t inter);
    // its rows
    static size_t bytes(size_t lat, size_t inter);
    // what holding one costs: its rows and its bookkeeping (the map node, the
    // allocator's headers), counted generously — what the store and the
    // memory plan count
    static size_t held_bytes(size_t lat, size_t inter) { return bytes(lat, inter) + 256; }
    // Decodes the expert's VQ record (container-v0 §5) with the layer's books;
    // rows split over the pool.
    void decode(platform::ThreadPool& pool, const ExpertBooks& books, const uint8_t* record, const format::ExpertLayout& layout);
    kernels::Int8Matrix gate, up, down;

private:
    platform::LineAlignedVector<uint8_t> buffer_;
};

class DecodedExperts {
public:
    explicit DecodedExperts(uint64_t capacity_bytes) : capacity_(capacity_bytes) {}
    // null when (layer, expert) is not held
    const DecodedExpert* find(int layer, int expert) const;
    // Room for one more of this size?
    bool has_room(size_t bytes) const;
    // Publishes a decoded expert (taking it from `decoded`); returns the held
    // one (an earlier insert of the same key wins), or null when it no longer
    // fits — `decoded` is then left with the caller.
    const DecodedExpert* insert(int layer, int expert, std::unique_ptr<DecodedExpert>& decoded, size_t bytes);
    // The held (layer, expert), decoding its record into the store first if
    // it has room; null when it is not held and does not fit.
    const DecodedExpert* hold(platform::ThreadPool& pool, const ExpertBooks& books, const format::ExpertLayout& layout, int layer,
                              int expert, const uint8_t* record, size_t lat, size_t inter);
    uint64_t held() const;
    uint64_t held_bytes() const;
    uint64_t capacity_bytes() const { return capacity_; }

private:
    static uint64_t key(int layer, int expert) { return static_cast<uint64_t>(layer) << 32 | static_cast<uint32_t>(expert); }
    uint64_t capacity_;
    mutable std::mutex mutex_;
    std::unordered_map<uint64_t, std::unique_ptr<DecodedExpert>> held_;
    uint64_t used_ = 0;
};

}  // namespace waste::model
