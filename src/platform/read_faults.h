// read_faults.h — a fault injector for the expert read path, in test builds
// only.
//
// The released library and CLI do not contain it: read_faults.cpp and the one
// call site (runtime/expert_cache.cpp, behind WASTE_FAULT_INJECTION) are
// compiled into a second object variant that only the fault test links
// (CMakeLists.txt, docs/ARCHITECTURE.md "Read faults"). Everything here is
// therefore unusable from shipping code: the declarations exist, the
// definitions do not.
//
// What it does: every expert read the cache issues is shown to a process-wide
// plan (the test's), which may answer with a fault. Asynchronous reads
// (io_uring, the pread pool) pass through a decorator of the AsyncReader
// that applies the fault at completion; synchronous reads ask the same plan
// in the cache's sync branch. Faults, as a failing disk shows them:
//   error        the read completes with EIO (the buffer is scribbled: a
//                failed read leaves undefined bytes)
//   short_read   the read completes short, as at EOF (the rest scribbled)
//   wrong_bytes  the read completes whole, one payload byte flipped
//   late         the read is started only after a delay, so its bytes land
//                and it completes after reads submitted later
// Deliberately not here: deciding what is correct — the test does that.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>

#include "platform/async_reader.h"

namespace waste::platform {

enum class ReadFault : uint8_t { none, error, short_read, wrong_bytes, late };
constexpr int read_fault_kinds = 5;
const char* read_fault_name(ReadFault fault);

// Where a read comes from, as the expert cache describes it.
enum class ReadPath : uint8_t { io_uring, pread, sync };
constexpr int read_paths = 3;
struct ReadSite {
    ReadPath path = ReadPath::sync;
    int layer = -1, expert = -1;
    bool lookahead = false;     // a speculative (router lookahead) read
};

// The test's plan: called once per read, on the thread that submits it.
using ReadFaultPlan = std::function<ReadFault(const ReadSite& site)>;

// Faults injected since reset_read_fault_counts(), by path, lookahead (0/1)
// and kind.
struct ReadFaultCounts {
    uint64_t injected[read_paths][2][read_fault_kinds] = {};
    uint64_t total() const;
    uint64_t of_path(ReadPath path) const;
    uint64_t of_kind(ReadFault fault) const;
    uint64_t lookahead_total() const;
};

struct ReadFaultSettings {
    // Bytes of a record a wrong_bytes fault may flip: [corrupt_begin,
    // corrupt_end) — the test passes the checked payload (the header's
    // reserved bytes are neither checked nor used).
    uint64_t corrupt_begin = 0, corrupt_end = 0;
    // How long a late read waits before it is started.
    uint32_t late_microseconds = 300;
    uint64_t seed = 1;          // where in the payload a flip lands, which byte value
};

// Installs the plan (null: no faults) and settings; process-wide.
void set_read_fault_plan(ReadFaultPlan plan, const ReadFaultSettings& settings);
ReadFaultCounts read_fault_counts();
void reset_read_fault_counts();
// The last non-late fault's site since reset_read_fault_counts() (layer -1
// when none): the error a generation ends with must name it or an earlier one.
bool read_fault_site_seen(int layer, int expert);

// The asynchronous hook: wraps a reader so each read consults the plan.
// site_of(tag) describes a request by its tag (the cache's slot).
std::unique_ptr<AsyncReader> inject_read_faults(std::unique_ptr<AsyncReader> reader,
                                                std::function<ReadSite(uint64_t tag)> site_of);

// The synchronous hook: the plan's answer for a sync read; the caller applies
// it (late: sleeps, wrong_bytes: corrupt_record after the read).
ReadFault sync_read_fault(const ReadSite& site);
void corrupt_record(uint8_t* buffer, uint32_t bytes);
// What a failed read leaves: [from, to) overwritten with a fixed pattern, so
// that serving such a slot from the cache would show in the output.
void scribble_record(uint8_t* buffer, uint32_t from, uint32_t to);
void late_read_delay();

}  // namespace waste::platform
