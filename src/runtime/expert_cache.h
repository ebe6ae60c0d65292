// expert_cache.h — expert records in RAM, bounded by the memory plan, and
// the reads that fill them.
//
// A fixed number of record-sized slots (4096-aligned, so a direct read lands
// in place: no bounce buffer, no I/O buffer beyond the slots). Which slot
// holds which record, the pins and the eviction policy are
// runtime/cache_index's; this class owns the storage and the reads.
//
// Reads are asynchronous (io_uring with the slots registered as fixed
// buffers, or a pread thread pool) or, for comparison, synchronous. The MoE
// step asks for a layer's records all at once (request), the misses are
// submitted together, and it takes them as they land (next_ready). Every
// record read from disk passes the container's record checks and its CRC-32
// on the consuming thread as its read completes, demand or lookahead, before
// anything can use it; a read that fails (an error, short, or bytes that fail
// the checks) is never served from the cache: a lookahead slot is forgotten
// at once, a demanded one when the request is abandoned, and the first
// failure ends the evaluation with an error naming the layer and expert.
// Before reading from a bank the cache checks that the file is still the one
// opened (platform::DirectFile::check_unchanged). Router lookahead fills slots speculatively
// (prefetch): those reads are counted apart from demand misses, never evict
// a pinned record, always leave a layer's worth of slots for demand, and stay
// pinned until the layer they were for is done.
//
// "No free slot" is an error, never a silent skip (upstream once skipped
// experts with exit code 0 — docs/anchors.md). Placement never changes a bit
// of the output.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "format/container.h"
#include "platform/error.h"
#include "platform/aligned_buffer.h"
#include "platform/async_reader.h"
#include "runtime/cache_index.h"
#include "runtime/cache_policy.h"

namespace waste::runtime {

// How expert records are read. automatic: io_uring where the kernel allows
// it, else the pread pool (io_note() says which and why).
enum class ExpertIo : uint32_t { automatic = 0, io_uring = 1, pread = 2, sync = 3 };
// "auto", "io_uring" (or "uring"), "pread", "sync" -> the kind;
// WASTE_ERR_INVALID_ARGUMENT naming the text otherwise.
ExpertIo parse_expert_io(std::string_view name);
const char* expert_io_name(ExpertIo io);

struct ExpertCacheStats {
    uint64_t hits = 0, misses = 0;          // demand lookups
    uint64_t prefetched = 0;                // speculative reads issued
    uint64_t prefetch_used = 0;             // demand hits on a prefetched record's first use
    uint64_t prefetch_late = 0;             // of those, hits whose read was still in flight (the demand waited)
    uint64_t prefetch_wasted = 0;           // prefetched records evicted before any use
    uint64_t bytes_read = 0;                // every byte read: demand misses and prefetches
    uint64_t prefetch_bytes = 0;            // of which speculative
    double read_seconds = 0;                // time the consumer was blocked on reads
};

// One record handed out by next_ready: its position in the request.
struct ReadyRecord {
    size_t index = 0;
    const uint8_t* record = nullptr;
};

class ExpertCache {
public:
    // depth: reads in flight at most (0 = enough for two layers' top-k and
    // the lookahead).
    ExpertCache(const format::Container& container, uint64_t slots, CachePolicyKind policy = default_cache_policy,
                ExpertIo io = ExpertIo::automatic, unsigned depth = 0);
    ~ExpertCache();
    ExpertCache(const ExpertCache&) = delete;
    ExpertCache& operator=(const ExpertCache&) = delete;

    // Pins every expert of `experts` (distinct ids of one layer, at most
    // available() of them) and starts the reads of those not cached. A
    // previous request must have been fully handed out.
    void request(int layer, std::span<const int> experts);
    // Blocks until at least one requested record not yet handed out is in
    // RAM and checked, and appends all such to *out (arrival order). Returns
    // false when every record of the request has been handed out.
    bool next_ready(std::vector<ReadyRecord>* out);
    // Router lookahead: starts speculative reads of those of `experts` (of
    // `layer`, best first) that are not cached, while more than `reserve`
    // slots stay available for demand. Does nothing in sync mode.
    void prefetch(int layer, std::span<const int> experts, uint64_t reserve);
    // The layer is done: its records and its prefetches are unpinned (a
    // prefetch still in flight is waited for first: its slot is the kernel's
    // until then).
    void release(int layer);
    // After a failure: waits for every read in flight, forgets the slots of
    // records not yet checked, unpins everything.
    void abandon();
    // One record, synchronously through the same path (warming, tests).
    std::span<const uint8_t> acquire(int layer, int expert);

    uint64_t slots() const { return slot_count_; }
    // Slots a request may pin now (free or unpinned).
    uint64_t available() const { return index_ ? index_->available() : 0; }
    CachePolicyKind policy() const { return policy_; }
    ExpertIo io() const { return io_; }
    // The read path in words: "io_uring, registered buffers", "pread threads
    // (io_uring is unavailable here: ...)", "synchronous".
    const std::string& io_note() const { return io_note_; }
    const ExpertCacheStats& stats() const { return stats_; }
    void reset_stats() { stats_ = {}; }
    // Bytes the reader itself holds beyond the slots (ring, thread stacks),
    // for the memory plan.
    static uint64_t reader_bytes(unsigned depth);
    static unsigned default_depth(const format::ModelConfig& config);

private:
    // empty: never read; loading: a read in flight (the slot is the kernel's
    // or a reader thread's); checked: landed and passed every check; failed:
    // its read or checks failed — never handed out, forgotten by abandon().
    enum class SlotState : uint8_t { empty, loading, checked, failed };
    struct Wanted {
        int expert = 0;
        uint64_t slot = 0;
        bool handed = false;
    };

    uint8_t* slot_data(uint64_t slot) { return storage_.data() + slot * record_bytes_; }
    void submit_read(uint64_t slot, int layer, int expert);
    // Waits for one completion and files it; timed as I/O wait.
    void wait_one();
    void complete(const platform::ReadCompletion& done);
    // Files a finished read: checks a whole one, or records the failure.
    // Never throws (it runs while draining after a failure, too).
    void settle(uint64_t slot, int error, uint64_t bytes, const std::string& io_failure = {});
    void fail_slot(uint64_t slot, Error error);
    bool demanded(uint64_t slot) const;
    // The bank is still the file opened; throws naming layer and file.
    void check_bank(int layer);
    void throw_failure() const;
    void drain();

    const format::Container& container_;
    uint64_t record_bytes_ = 0;
    uint64_t slot_count_ = 0;   // 0 when the container has no experts
    CachePolicyKind policy_;
    ExpertIo io_;
    std::string io_note_;
    platform::AlignedBuffer storage_;   // [slots][record_bytes]
    std::unique_ptr<CacheIndex> index_; // null when slot_count_ is 0
    std::unique_ptr<platform::AsyncReader> reader_;  // null in sync mode
    std::vector<SlotState> state_;      // [slots]
    std::vector<CacheKey> slot_key_;    // [slots]: what a read in flight is for
    std::vector<uint8_t> speculative_;  // [slots]: its read was a prefetch
    int request_layer_ = -1;
    std::vector<Wanted> wanted_;
    size_t handed_ = 0;
    std::vector<std::pair<int, uint64_t>> prefetch_pins_;  // (layer, slot)
    ExpertCacheStats stats_;
    // The first failed read or check since the last abandon(): thrown by
    // next_ready and release until then, so a failed lookahead read ends the
    // evaluation as a failed demand read does.
    std::optional<Error> failure_;
};

}  // namespace waste::runtime
