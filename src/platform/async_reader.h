// async_reader.h — many reads in flight at once, consumed as they land.
//
// Two backends behind one interface:
//   io_uring  (Linux, liburing): one ring, up to `depth` reads in flight, the
//             caller's aligned buffers may be registered once (fixed reads);
//   pread     a small pool of threads making positional reads (pread; on
//             Windows ReadFile at an offset, native_file.h), for systems
//             where io_uring is unavailable or refused, and for comparison.
// Both read whole requests (short reads are resubmitted) and report errors
// per request. The backend never changes a byte of what is read.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "platform/native_file.h"

namespace waste::platform {

enum class IoBackend { io_uring, pread };
const char* io_backend_name(IoBackend backend);

struct ReadRequest {
    NativeFile file = no_native_file;
    uint64_t offset = 0;
    uint8_t* buffer = nullptr;
    uint32_t bytes = 0;
    uint64_t tag = 0;       // returned with the completion
};

struct ReadCompletion {
    uint64_t tag = 0;
    int error = 0;          // 0, or the system's code (system_error_text)
    uint32_t bytes = 0;     // bytes read (== requested unless error or EOF)
};

class AsyncReader {
public:
    virtual ~AsyncReader() = default;
    virtual IoBackend backend() const = 0;
    // Queues a read; it starts at once (io_uring: submitted with the next
    // submit()/wait; pread: handed to a thread). Never blocks for long: at
    // most `depth` reads are in flight, beyond that submit waits for one.
    virtual void submit(const ReadRequest& request) = 0;
    // Blocks until at least one read has completed (if any are in flight);
    // returns false when nothing is in flight.
    virtual bool wait(ReadCompletion* completion) = 0;
    // Non-blocking: a completed read, if any.
    virtual bool poll(ReadCompletion* completion) = 0;
    virtual unsigned in_flight() const = 0;
    // Registers a long-lived buffer region (e.g. the expert cache's slots) so
    // reads into it skip per-read page pinning (io_uring fixed buffers).
    // Returns false, with the reason in *note, when registration is refused
    // (RLIMIT_MEMLOCK, say): reads still work, unregistered.
    virtual bool register_region(uint8_t* base, size_t bytes, std::string* note) = 0;
};

// Creates a reader. io_uring falls back to nothing: if the ring cannot be set
// up (kernel, seccomp, io_uring_disabled), this throws WASTE_ERR_UNSUPPORTED
// with the reason, and the caller may choose pread (make_default_reader does).
// pread_threads: reader threads of the pread backend (0 = min(depth, 4)).
std::unique_ptr<AsyncReader> make_async_reader(IoBackend backend, unsigned depth, unsigned pread_threads = 0);

// io_uring when it works here, else pread; *note says which and why.
std::unique_ptr<AsyncReader> make_default_reader(unsigned depth, std::string* note);

}  // namespace waste::platform
