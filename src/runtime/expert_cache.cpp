// expert_cache.cpp — the slots' storage and the reads into them: demand
// requests consumed in arrival order, speculative prefetches, the record
// checks before first use, and the clean-up after a failure.
#include "runtime/expert_cache.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstring>

#include "platform/error.h"
#ifdef WASTE_FAULT_INJECTION
#include "platform/read_faults.h"
#endif

namespace waste::runtime {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Reader threads of the pread backend: enough to keep an NVMe queue busy
// with a layer's top-k in flight, few enough to cost nothing when idle.
constexpr unsigned pread_threads = 4;
// Thread stack pages a reader thread touches (for the plan; glibc reserves
// 8 MiB of address space per thread but only touched pages are resident).
constexpr uint64_t reader_thread_bytes = 64 << 10;

}  // namespace

ExpertIo parse_expert_io(std::string_view name) {
    if (name == "auto" || name == "default") return ExpertIo::automatic;
    if (name == "io_uring" || name == "uring") return ExpertIo::io_uring;
    if (name == "pread") return ExpertIo::pread;
    if (name == "sync") return ExpertIo::sync;
    fail(WASTE_ERR_INVALID_ARGUMENT, "expert I/O \"{}\" is none of auto, io_uring, pread, sync", name);
}

const char* expert_io_name(ExpertIo io) {
    switch (io) {
        case ExpertIo::automatic: return "auto";
        case ExpertIo::io_uring: return "io_uring";
        case ExpertIo::pread: return "pread";
        case ExpertIo::sync: return "sync";
    }
    return "?";
}

unsigned ExpertCache::default_depth(const format::ModelConfig& config) {
    // a layer's top-k plus the next layer's lookahead in flight, and a prefill
    // chunk's prediction of every expert of the next layer (router_lookahead.cpp)
    // with a decode step's top-k: submit blocks beyond the depth, so a
    // shallower ring would make the chunk wait for its own prefetch instead
    // of computing while it lands. io_uring rings are powers of two.
    const unsigned top_k = static_cast<unsigned>(std::max(config.top_k, 1));
    const unsigned wanted = std::max({8u, 4u * top_k, static_cast<unsigned>(std::max(config.experts, 0)) + top_k});
    return std::min(256u, std::bit_ceil(wanted));
}

uint64_t ExpertCache::reader_bytes(unsigned depth) {
    // io_uring: a 64-byte submission and two 16-byte completion entries per
    // slot of the ring, plus the ring headers (a page each); pread: the
    // threads' touched stacks. The larger of the two, so either fits.
    const uint64_t ring = static_cast<uint64_t>(depth) * (64 + 2 * 16) + 3 * 4096;
    return std::max<uint64_t>(ring, pread_threads * reader_thread_bytes);
}

ExpertCache::ExpertCache(const format::Container& container, uint64_t slots, CachePolicyKind policy, ExpertIo io,
                         unsigned depth)
    : container_(container), record_bytes_(container.has_experts() ? container.expert_layout().record_bytes : 0),
      slot_count_(container.has_experts() ? slots : 0), policy_(policy), io_(io) {
    if (!slot_count_) {
        io_note_ = "no experts";
        return;
    }
    storage_ = platform::AlignedBuffer(slot_count_ * record_bytes_);
    index_ = std::make_unique<CacheIndex>(slot_count_, policy);
    state_.assign(slot_count_, SlotState::empty);
    slot_key_.assign(slot_count_, CacheKey{});
    speculative_.assign(slot_count_, 0);
    if (depth == 0) depth = default_depth(container.config());
    switch (io) {
        case ExpertIo::sync: io_note_ = "synchronous reads"; break;
        case ExpertIo::pread:
            reader_ = platform::make_async_reader(platform::IoBackend::pread, depth, pread_threads);
            io_note_ = fmt::format("pread, {} threads", pread_threads);
            break;
        case ExpertIo::io_uring:  // throws WASTE_ERR_UNSUPPORTED with the reason when the kernel refuses
            reader_ = platform::make_async_reader(platform::IoBackend::io_uring, depth);
            break;
        case ExpertIo::automatic: {
            std::string why;
            reader_ = platform::make_default_reader(depth, &why);
            if (reader_->backend() == platform::IoBackend::pread) io_note_ = why;
            break;
        }
    }
#ifdef WASTE_FAULT_INJECTION
    // test builds only (platform/read_faults.h): every asynchronous read
    // passes the fault plan; the reader underneath is unchanged
    if (reader_)
        reader_ = platform::inject_read_faults(std::move(reader_), [this](uint64_t slot) {
            return platform::ReadSite{platform::ReadPath::sync, slot_key_[slot].layer, slot_key_[slot].expert,
                                      speculative_[slot] != 0};
        });
#endif
    if (reader_ && reader_->backend() == platform::IoBackend::io_uring) {
        std::string why;
        io_note_ = reader_->register_region(storage_.data(), storage_.size(), &why)
                       ? "io_uring, cache slots registered as fixed buffers"
                       : "io_uring, unregistered buffers (" + why + ")";
    }
}

ExpertCache::~ExpertCache() {
    // the kernel (or a reader thread) may still be writing into a slot
    drain();
}

void ExpertCache::submit_read(uint64_t slot, int layer, int expert) {
    state_[slot] = SlotState::loading;
    slot_key_[slot] = CacheKey{layer, expert};
    const uint64_t offset = static_cast<uint64_t>(expert) * record_bytes_;
    if (reader_) {
        reader_->submit(platform::ReadRequest{container_.bank_file(layer).native(), offset, slot_data(slot),
                                              static_cast<uint32_t>(record_bytes_), slot});
        return;
    }
    const auto start = std::chrono::steady_clock::now();
#ifdef WASTE_FAULT_INJECTION
    const platform::ReadFault fault =
        platform::sync_read_fault(platform::ReadSite{platform::ReadPath::sync, layer, expert, speculative_[slot] != 0});
    if (fault == platform::ReadFault::late) platform::late_read_delay();
#endif
    std::string io_failure;
    try {
        container_.bank_file(layer).read_at(offset, {slot_data(slot), record_bytes_});
    } catch (const Error& error) {
        io_failure = error.what();
    }
    int error = 0;
    uint64_t bytes = io_failure.empty() ? record_bytes_ : 0;
#ifdef WASTE_FAULT_INJECTION
    if (io_failure.empty()) {
        const auto whole = static_cast<uint32_t>(record_bytes_);
        if (fault == platform::ReadFault::error) platform::scribble_record(slot_data(slot), 0, whole), error = EIO, bytes = 0;
        if (fault == platform::ReadFault::short_read) platform::scribble_record(slot_data(slot), whole / 2, whole), bytes = whole / 2;
        if (fault == platform::ReadFault::wrong_bytes) platform::corrupt_record(slot_data(slot), whole);
    }
#endif
    stats_.read_seconds += seconds_since(start);
    settle(slot, error, bytes, io_failure);
    throw_failure();
}

void ExpertCache::complete(const platform::ReadCompletion& done) {
    const uint64_t slot = done.tag;
    WASTE_CHECK(slot < slot_count_ && state_[slot] == SlotState::loading);
    settle(slot, done.error, done.bytes);
}

bool ExpertCache::demanded(uint64_t slot) const {
    return std::any_of(wanted_.begin(), wanted_.end(), [&](const Wanted& w) { return w.slot == slot && !w.handed; });
}

void ExpertCache::settle(uint64_t slot, int error, uint64_t bytes, const std::string& io_failure) {
    const CacheKey key = slot_key_[slot];
    const std::string& path = container_.bank_file(key.layer).path();
    const char* kind = speculative_[slot] ? " (a lookahead read)" : "";
    if (!io_failure.empty() || error != 0 || bytes != record_bytes_) {
        std::string what = !io_failure.empty() ? io_failure
                           : error != 0        ? fmt::format("{} reading {}", platform::system_error_text(error), path)
                                               : fmt::format("short read of {} of {} bytes from {} (file truncated?)", bytes,
                                                             record_bytes_, path);
        fail_slot(slot, Error(WASTE_ERR_IO, fmt::format("expert {} of layer {}: {}{}", key.expert, key.layer, what, kind)));
        return;
    }
    const std::span<const uint8_t> record{slot_data(slot), record_bytes_};
    try {
        // header and index checks (and the CRC-32 with --verify) ...
        container_.check_expert(key.layer, key.expert, record);
        // ... and the CRC-32 of every record read from disk in any case: it is
        // what catches a wrong byte in the payload, which the O(1) header
        // checks cannot, and it costs a pass over bytes just read (measured:
        // docs/ARCHITECTURE.md "Read faults").
        if (!container_.verify_checksums())
            format::verify_expert_checksum(record, key.layer, key.expert, container_.expert_layout());
    } catch (const Error& failed) {  // the message names the expert and layer
        fail_slot(slot, Error(failed.status(), std::string(failed.what()) + kind));
        return;
    }
    stats_.bytes_read += record_bytes_;
    if (speculative_[slot]) stats_.prefetch_bytes += record_bytes_;
    state_[slot] = SlotState::checked;
}

void ExpertCache::fail_slot(uint64_t slot, Error error) {
    state_[slot] = SlotState::failed;
    if (!failure_) failure_ = std::move(error);
    if (!demanded(slot)) {
        // nothing waits on it: forget it now, so no later lookup can hit it
        index_->forget(slot);
        std::erase_if(prefetch_pins_, [&](const auto& pin) { return pin.second == slot; });
    }
}

void ExpertCache::throw_failure() const {
    if (failure_) throw *failure_;
}

void ExpertCache::check_bank(int layer) {
    try {
        container_.bank_file(layer).check_unchanged();
    } catch (const Error& error) {
        fail(error.status(), "layer {}'s expert bank: {}", layer, error.what());
    }
}

void ExpertCache::wait_one() {
    const auto start = std::chrono::steady_clock::now();
    platform::ReadCompletion done;
    const bool got = reader_->wait(&done);
    stats_.read_seconds += seconds_since(start);
    WASTE_CHECK(got);
    complete(done);
}

void ExpertCache::drain() {
    if (!reader_) return;
    platform::ReadCompletion done;
    while (reader_->wait(&done)) complete(done);
}

void ExpertCache::request(int layer, std::span<const int> experts) {
    if (!index_) fail(WASTE_ERR_BUDGET, "expert cache: no slot for layer {} (the cache has 0 slots)", layer);
    WASTE_CHECK(handed_ == wanted_.size());
    const format::ExpertBank& bank = container_.bank(layer);
    wanted_.clear();
    handed_ = 0;
    request_layer_ = layer;
    // The bank is checked once per request that will read from it, before
    // any lookup: a miss re-keys its slot, which must then be read.
    if (std::any_of(experts.begin(), experts.end(), [&](int e) { return !index_->contains(layer, e); })) check_bank(layer);
    for (int expert : experts) {
        if (expert < 0 || static_cast<uint32_t>(expert) >= bank.experts)
            fail(WASTE_ERR_INVALID_ARGUMENT, "expert {} of layer {} is out of range (experts {})", expert, layer, bank.experts);
        const CacheLookup found = index_->lookup(layer, expert);
        wanted_.push_back(Wanted{expert, found.slot, false});
        if (found.hit) {
            ++stats_.hits;
            if (found.prefetched) {
                ++stats_.prefetch_used;
                if (state_[found.slot] == SlotState::loading) {
                    // reads done but not yet reaped are not late
                    platform::ReadCompletion done;
                    while (state_[found.slot] == SlotState::loading && reader_ && reader_->poll(&done)) complete(done);
                    if (state_[found.slot] == SlotState::loading) ++stats_.prefetch_late;
                }
            }
            continue;
        }
        ++stats_.misses;
        if (found.evicted_unused) ++stats_.prefetch_wasted;
        speculative_[found.slot] = 0;
        submit_read(found.slot, layer, expert);
    }
}

bool ExpertCache::next_ready(std::vector<ReadyRecord>* out) {
    while (handed_ < wanted_.size()) {
        throw_failure();  // the first failed read, demand or lookahead, ends the evaluation
        bool any = false;
        for (size_t i = 0; i < wanted_.size(); ++i) {
            Wanted& w = wanted_[i];
            if (w.handed || state_[w.slot] != SlotState::checked) continue;
            w.handed = true;
            ++handed_;
            out->push_back(ReadyRecord{i, slot_data(w.slot)});
            any = true;
        }
        if (any) return true;
        wait_one();
    }
    return false;
}

void ExpertCache::prefetch(int layer, std::span<const int> experts, uint64_t reserve) {
    if (!index_ || !reader_) return;
    const format::ExpertBank& bank = container_.bank(layer);
    bool bank_checked = false;
    for (int expert : experts) {
        WASTE_CHECK(expert >= 0 && static_cast<uint32_t>(expert) < bank.experts);
        if (!bank_checked && !index_->contains(layer, expert)) check_bank(layer), bank_checked = true;
        CacheLookup found;
        if (!index_->fill_speculative(layer, expert, reserve, &found)) continue;
        ++stats_.prefetched;
        if (found.evicted_unused) ++stats_.prefetch_wasted;
        speculative_[found.slot] = 1;
        prefetch_pins_.emplace_back(layer, found.slot);
        submit_read(found.slot, layer, expert);
    }
}

void ExpertCache::release(int layer) {
    if (!index_) return;
    if (request_layer_ == layer) {
        for (const Wanted& w : wanted_) index_->unpin(w.slot);
        wanted_.clear();
        handed_ = 0;
        request_layer_ = -1;
    }
    std::vector<uint64_t> mine;
    for (const auto& [pin_layer, slot] : prefetch_pins_)
        if (pin_layer == layer) mine.push_back(slot);
    for (uint64_t slot : mine) {
        while (state_[slot] == SlotState::loading) wait_one();  // a failed one leaves prefetch_pins_
        auto pin = std::find(prefetch_pins_.begin(), prefetch_pins_.end(), std::pair<int, uint64_t>{layer, slot});
        if (pin == prefetch_pins_.end()) continue;
        index_->unpin(slot);
        prefetch_pins_.erase(pin);
    }
    throw_failure();  // a lookahead read of this layer that failed
}

void ExpertCache::abandon() {
    if (!index_) return;
    drain();
    for (uint64_t slot = 0; slot < slot_count_; ++slot)
        if (state_[slot] == SlotState::failed) {  // a demanded read that failed, still filed
            index_->forget(slot);
            state_[slot] = SlotState::empty;
        }
    index_->unpin_all();
    failure_.reset();
    wanted_.clear();
    handed_ = 0;
    request_layer_ = -1;
    prefetch_pins_.clear();
}

std::span<const uint8_t> ExpertCache::acquire(int layer, int expert) {
    const int one[1] = {expert};
    request(layer, one);
    std::vector<ReadyRecord> ready;
    next_ready(&ready);
    WASTE_CHECK(ready.size() == 1);
    return {ready[0].record, record_bytes_};
}

}  // namespace waste::runtime
