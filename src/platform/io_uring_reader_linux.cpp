// io_uring_reader_linux.cpp — the io_uring backend of async_reader.h (Linux
// only: CMakeLists.txt compiles *_linux.cpp there alone).
#include "platform/async_reader.h"

#include <liburing.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <unordered_map>
#include <vector>

#include "platform/error.h"

namespace waste::platform {
namespace {

// ThreadSanitizer sees the pread backend's writes into a buffer (it
// intercepts pread) but not the kernel's under io_uring. The annotation
// models an io_uring read as the queuing thread writing the whole buffer
// when it queues the read: a thread still reading the buffer's old contents
// without having synchronised with the queuing thread is exactly the race
// the ring would make, and the completion is reaped by the queuing thread
// itself (a reader is driven from one thread), so every later reader is
// ordered after it. __tsan_write_range is the TSan runtime's (exported, not
// in its public header).
#if defined(__SANITIZE_THREAD__)
#define WASTE_UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define WASTE_UNDER_TSAN 1
#endif
#endif
#ifdef WASTE_UNDER_TSAN
extern "C" void __tsan_write_range(void* address, unsigned long bytes);
void annotate_kernel_write(void* buffer, size_t bytes) { __tsan_write_range(buffer, bytes); }
#else
void annotate_kernel_write(void*, size_t) {}
#endif

// ---------------------------------------------------------------- io_uring
class UringReader final : public AsyncReader {
public:
    explicit UringReader(unsigned depth) : depth_(depth) {
        const int result = io_uring_queue_init(depth, &ring_, 0);
        if (result < 0) fail(WASTE_ERR_UNSUPPORTED, "io_uring is unavailable here: {}", std::strerror(-result));
    }
    ~UringReader() override {
        // drain what is in flight: the buffers belong to the caller
        ReadCompletion ignored;
        while (in_flight_ > 0 && wait(&ignored)) {
        }
        io_uring_queue_exit(&ring_);
    }
    IoBackend backend() const override { return IoBackend::io_uring; }

    void submit(const ReadRequest& request) override {
        while (in_flight_ >= depth_) {
            ReadCompletion done;
            wait_one(&done, true);
            ready_.push_back(done);
        }
        pending_[request.tag] = Pending{request, 0};
        queue(request.tag);
        io_uring_submit(&ring_);
    }

    bool wait(ReadCompletion* completion) override {
        if (!ready_.empty()) return take_ready(completion);
        if (in_flight_ == 0) return false;
        return wait_one(completion, true);
    }

    bool poll(ReadCompletion* completion) override {
        if (!ready_.empty()) return take_ready(completion);
        if (in_flight_ == 0) return false;
        return wait_one(completion, false);
    }

    unsigned in_flight() const override { return in_flight_ + static_cast<unsigned>(ready_.size()); }

    bool register_region(uint8_t* base, size_t bytes, std::string* note) override {
        if (in_flight_ != 0 || !regions_.empty()) {
            if (note) *note = "fixed buffers can be registered once, with nothing in flight";
            return false;
        }
        // the kernel takes at most 1 GiB per registered buffer
        constexpr size_t max_region = size_t{1} << 30;
        std::vector<iovec> vectors;
        for (size_t done = 0; done < bytes; done += max_region)
            vectors.push_back(iovec{base + done, std::min(max_region, bytes - done)});
        const int result = io_uring_register_buffers(&ring_, vectors.data(), static_cast<unsigned>(vectors.size()));
        if (result < 0) {
            if (note) *note = std::string("io_uring buffer registration refused: ") + std::strerror(-result);
            return false;
        }
        regions_ = std::move(vectors);
        return true;
    }

private:
    // The registered region holding [buffer, buffer+bytes), or -1.
    int region_of(const uint8_t* buffer, size_t bytes) const {
        for (size_t i = 0; i < regions_.size(); ++i) {
            const uint8_t* begin = static_cast<const uint8_t*>(regions_[i].iov_base);
            if (buffer >= begin && buffer + bytes <= begin + regions_[i].iov_len) return static_cast<int>(i);
        }
        return -1;
    }

    struct Pending {
        ReadRequest request;
        uint32_t done = 0;
    };

    void queue(uint64_t tag) {
        Pending& p = pending_[tag];
        io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
        if (!sqe) {
            io_uring_submit(&ring_);
            sqe = io_uring_get_sqe(&ring_);
        }
        WASTE_CHECK(sqe != nullptr);
        uint8_t* target = p.request.buffer + p.done;
        const uint32_t length = p.request.bytes - p.done;
        const int region = region_of(target, length);
        annotate_kernel_write(target, length);
        if (region >= 0) io_uring_prep_read_fixed(sqe, static_cast<int>(p.request.file), target, length, p.request.offset + p.done, region);
        else io_uring_prep_read(sqe, static_cast<int>(p.request.file), target, length, p.request.offset + p.done);
        io_uring_sqe_set_data64(sqe, tag);
        ++in_flight_;
    }

    bool take_ready(ReadCompletion* completion) {
        *completion = ready_.front();
        ready_.pop_front();
        return true;
    }

    // Handles completions until one request is whole (or failed).
    bool wait_one(ReadCompletion* completion, bool block) {
        while (true) {
            io_uring_cqe* cqe = nullptr;
            const int result = block ? io_uring_wait_cqe(&ring_, &cqe) : io_uring_peek_cqe(&ring_, &cqe);
            if (result == -EAGAIN && !block) return false;
            if (result == -EINTR) continue;
            if (result < 0) fail(WASTE_ERR_IO, "io_uring wait failed: {}", std::strerror(-result));
            const uint64_t tag = io_uring_cqe_get_data64(cqe);
            const int res = cqe->res;
            io_uring_cqe_seen(&ring_, cqe);
            --in_flight_;
            auto it = pending_.find(tag);
            WASTE_CHECK(it != pending_.end());
            Pending& p = it->second;
            if (res == -EAGAIN || res == -EINTR) {  // transient: resubmit
                queue(tag);
                io_uring_submit(&ring_);
                continue;
            }
            if (res > 0 && p.done + static_cast<uint32_t>(res) < p.request.bytes) {  // short read: the rest
                p.done += static_cast<uint32_t>(res);
                queue(tag);
                io_uring_submit(&ring_);
                continue;
            }
            *completion = ReadCompletion{tag, res < 0 ? -res : 0, res < 0 ? p.done : p.done + static_cast<uint32_t>(res)};
            pending_.erase(it);
            return true;
        }
    }

    io_uring ring_{};
    unsigned depth_;
    unsigned in_flight_ = 0;
    std::unordered_map<uint64_t, Pending> pending_;
    std::deque<ReadCompletion> ready_;
    std::vector<iovec> regions_;
};

}  // namespace

std::unique_ptr<AsyncReader> make_uring_reader(unsigned depth) { return std::make_unique<UringReader>(depth); }

}  // namespace waste::platform
