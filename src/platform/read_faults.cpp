// read_faults.cpp — the test-only read fault injector (read_faults.h). Built
// into the fault test's object variant only, never into libwaste.
#include "platform/read_faults.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <random>
#include <set>
#include <thread>
#include <unordered_map>
#include <utility>

namespace waste::platform {
namespace {

// One mutex over the plan and the counters: the plan is asked on the thread
// that submits reads (the session's), the test reads the counts between
// generations; the pread workers never come here.
struct Injector {
    std::mutex mutex;
    ReadFaultPlan plan;
    ReadFaultSettings settings;
    ReadFaultCounts counts;
    std::set<std::pair<int, int>> sites;  // (layer, expert) of non-late faults
    std::mt19937_64 random{1};
};

Injector& injector() {
    static Injector instance;
    return instance;
}

ReadFault decide(const ReadSite& site) {
    Injector& in = injector();
    std::lock_guard lock(in.mutex);
    if (!in.plan) return ReadFault::none;
    const ReadFault fault = in.plan(site);
    if (fault == ReadFault::none) return fault;
    ++in.counts.injected[static_cast<int>(site.path)][site.lookahead ? 1 : 0][static_cast<int>(fault)];
    if (fault != ReadFault::late) in.sites.emplace(site.layer, site.expert);
    return fault;
}

std::chrono::microseconds late_delay() {
    Injector& in = injector();
    std::lock_guard lock(in.mutex);
    return std::chrono::microseconds(in.settings.late_microseconds);
}

// Wraps a reader: faults are decided at submit (where the site is known)
// and applied when the inner read completes; a late read is held back and
// handed to the inner reader only when its delay is over (or when nothing
// else is left to wait for), so its bytes really land after later reads.
class FaultyReader final : public AsyncReader {
public:
    FaultyReader(std::unique_ptr<AsyncReader> inner, std::function<ReadSite(uint64_t)> site_of)
        : inner_(std::move(inner)), site_of_(std::move(site_of)) {}
    IoBackend backend() const override { return inner_->backend(); }

    void submit(const ReadRequest& request) override {
        ReadSite site = site_of_(request.tag);
        site.path = inner_->backend() == IoBackend::io_uring ? ReadPath::io_uring : ReadPath::pread;
        const ReadFault fault = decide(site);
        if (fault == ReadFault::late) {
            late_.push_back(Late{request, std::chrono::steady_clock::now() + late_delay()});
            return;
        }
        if (fault != ReadFault::none) applied_[request.tag] = Applied{fault, request};
        release_due(false);
        inner_->submit(request);
    }

    bool wait(ReadCompletion* completion) override {
        release_due(inner_->in_flight() == 0);
        if (!inner_->wait(completion)) return false;
        apply(completion);
        return true;
    }

    bool poll(ReadCompletion* completion) override {
        release_due(false);
        if (!inner_->poll(completion)) return false;
        apply(completion);
        return true;
    }

    unsigned in_flight() const override { return inner_->in_flight() + static_cast<unsigned>(late_.size()); }

    bool register_region(uint8_t* base, size_t bytes, std::string* note) override {
        return inner_->register_region(base, bytes, note);
    }

private:
    struct Late {
        ReadRequest request;
        std::chrono::steady_clock::time_point due;
    };
    struct Applied {
        ReadFault fault = ReadFault::none;
        ReadRequest request;
    };

    // Starts the held reads whose delay is over; with must_start, at least
    // the oldest (sleeping out its delay), so a wait never finds nothing to
    // wait for while reads are held.
    void release_due(bool must_start) {
        const auto now = std::chrono::steady_clock::now();
        while (!late_.empty() && (late_.front().due <= now || must_start)) {
            if (late_.front().due > now) std::this_thread::sleep_until(late_.front().due);
            inner_->submit(late_.front().request);
            late_.pop_front();
            must_start = false;
        }
    }

    void apply(ReadCompletion* completion) {
        auto it = applied_.find(completion->tag);
        if (it == applied_.end()) return;
        const Applied a = it->second;
        applied_.erase(it);
        if (completion->error != 0) return;  // the disk failed it on its own
        switch (a.fault) {
            case ReadFault::error:
                scribble_record(a.request.buffer, 0, completion->bytes);
                *completion = ReadCompletion{completion->tag, EIO, 0};
                break;
            case ReadFault::short_read: {
                const uint32_t kept = completion->bytes / 2;
                scribble_record(a.request.buffer, kept, completion->bytes);
                completion->bytes = kept;
                break;
            }
            case ReadFault::wrong_bytes: corrupt_record(a.request.buffer, completion->bytes); break;
            default: break;
        }
    }

    std::unique_ptr<AsyncReader> inner_;
    std::function<ReadSite(uint64_t)> site_of_;
    std::deque<Late> late_;
    std::unordered_map<uint64_t, Applied> applied_;  // tag -> the fault its completion gets
};

}  // namespace

const char* read_fault_name(ReadFault fault) {
    switch (fault) {
        case ReadFault::none: return "none";
        case ReadFault::error: return "EIO";
        case ReadFault::short_read: return "short read";
        case ReadFault::wrong_bytes: return "wrong bytes";
        case ReadFault::late: return "late";
    }
    return "?";
}

uint64_t ReadFaultCounts::total() const {
    uint64_t sum = 0;
    for (int p = 0; p < read_paths; ++p) sum += of_path(static_cast<ReadPath>(p));
    return sum;
}

uint64_t ReadFaultCounts::of_path(ReadPath path) const {
    uint64_t sum = 0;
    for (int l = 0; l < 2; ++l)
        for (int k = 0; k < read_fault_kinds; ++k) sum += injected[static_cast<int>(path)][l][k];
    return sum;
}

uint64_t ReadFaultCounts::of_kind(ReadFault fault) const {
    uint64_t sum = 0;
    for (int p = 0; p < read_paths; ++p)
        for (int l = 0; l < 2; ++l) sum += injected[p][l][static_cast<int>(fault)];
    return sum;
}

uint64_t ReadFaultCounts::lookahead_total() const {
    uint64_t sum = 0;
    for (int p = 0; p < read_paths; ++p)
        for (int k = 0; k < read_fault_kinds; ++k) sum += injected[p][1][k];
    return sum;
}

void set_read_fault_plan(ReadFaultPlan plan, const ReadFaultSettings& settings) {
    Injector& in = injector();
    std::lock_guard lock(in.mutex);
    in.plan = std::move(plan);
    in.settings = settings;
    in.random.seed(settings.seed);
}

ReadFaultCounts read_fault_counts() {
    Injector& in = injector();
    std::lock_guard lock(in.mutex);
    return in.counts;
}

void reset_read_fault_counts() {
    Injector& in = injector();
    std::lock_guard lock(in.mutex);
    in.counts = ReadFaultCounts{};
    in.sites.clear();
}

bool read_fault_site_seen(int layer, int expert) {
    Injector& in = injector();
    std::lock_guard lock(in.mutex);
    return in.sites.count({layer, expert}) != 0;
}

std::unique_ptr<AsyncReader> inject_read_faults(std::unique_ptr<AsyncReader> reader,
                                                std::function<ReadSite(uint64_t tag)> site_of) {
    return std::make_unique<FaultyReader>(std::move(reader), std::move(site_of));
}

ReadFault sync_read_fault(const ReadSite& site) {
    ReadSite s = site;
    s.path = ReadPath::sync;
    return decide(s);
}

void corrupt_record(uint8_t* buffer, uint32_t bytes) {
    Injector& in = injector();
    std::lock_guard lock(in.mutex);
    const uint64_t end = std::min<uint64_t>(in.settings.corrupt_end, bytes);
    if (in.settings.corrupt_begin >= end) return;
    const uint64_t at = in.settings.corrupt_begin + in.random() % (end - in.settings.corrupt_begin);
    // XOR with a nonzero value: the byte always changes, and a CRC-32 catches
    // every single-byte change
    buffer[at] ^= static_cast<uint8_t>(1 + in.random() % 255);
}

void scribble_record(uint8_t* buffer, uint32_t from, uint32_t to) {
    if (from < to) std::memset(buffer + from, 0xA5, to - from);
}

void late_read_delay() { std::this_thread::sleep_for(late_delay()); }

}  // namespace waste::platform
