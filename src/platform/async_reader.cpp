#include "platform/async_reader.h"
#include "platform/library_thread.h"


#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "platform/error.h"

namespace waste::platform {

const char* io_backend_name(IoBackend backend) { return backend == IoBackend::io_uring ? "io_uring" : "pread"; }

namespace {

// ---------------------------------------------------------------- pread pool
class PreadReader final : public AsyncReader {
public:
    PreadReader(unsigned depth, unsigned threads) : depth_(depth) {
        if (threads == 0) threads = std::max(1u, std::min(depth, 4u));  // a few readers keep an NVMe queue busy
        for (unsigned i = 0; i < threads; ++i) workers_.push_back(start_library_thread([this] { work(); }));
    }
    ~PreadReader() override {
        {
            std::lock_guard lock(mutex_);
            stopping_ = true;
        }
        work_ready_.notify_all();
        for (auto& worker : workers_) worker.join();
    }
    IoBackend backend() const override { return IoBackend::pread; }

    void submit(const ReadRequest& request) override {
        std::unique_lock lock(mutex_);
        done_ready_.wait(lock, [&] { return queued_.size() + running_ + done_.size() < depth_ || !done_.empty(); });
        queued_.push_back(request);
        work_ready_.notify_one();
    }

    bool wait(ReadCompletion* completion) override {
        std::unique_lock lock(mutex_);
        if (done_.empty() && queued_.empty() && running_ == 0) return false;
        done_ready_.wait(lock, [&] { return !done_.empty(); });
        *completion = done_.front();
        done_.pop_front();
        done_ready_.notify_all();
        return true;
    }

    bool poll(ReadCompletion* completion) override {
        std::lock_guard lock(mutex_);
        if (done_.empty()) return false;
        *completion = done_.front();
        done_.pop_front();
        done_ready_.notify_all();
        return true;
    }

    unsigned in_flight() const override {
        std::lock_guard lock(mutex_);
        return static_cast<unsigned>(queued_.size() + running_ + done_.size());
    }

    bool register_region(uint8_t*, size_t, std::string* note) override {
        if (note) *note = "pread has no registered buffers";
        return false;
    }

private:
    void work() {
        while (true) {
            ReadRequest request;
            {
                std::unique_lock lock(mutex_);
                work_ready_.wait(lock, [&] { return stopping_ || !queued_.empty(); });
                if (stopping_ && queued_.empty()) return;
                request = queued_.front();
                queued_.pop_front();
                ++running_;
            }
            ReadCompletion completion{request.tag, 0, 0};
            while (completion.bytes < request.bytes) {
                const int64_t got = read_at_offset(request.file, request.buffer + completion.bytes,
                                                   request.bytes - completion.bytes, request.offset + completion.bytes,
                                                   &completion.error);
                if (got < 0) break;
                if (got == 0) break;  // EOF: short
                completion.bytes += static_cast<uint32_t>(got);
            }
            {
                std::lock_guard lock(mutex_);
                --running_;
                done_.push_back(completion);
            }
            done_ready_.notify_all();
        }
    }

    unsigned depth_;
    mutable std::mutex mutex_;
    std::condition_variable work_ready_, done_ready_;
    std::deque<ReadRequest> queued_;
    std::deque<ReadCompletion> done_;
    unsigned running_ = 0;
    bool stopping_ = false;
    std::vector<std::thread> workers_;
};

}  // namespace

#if defined(__linux__)
std::unique_ptr<AsyncReader> make_uring_reader(unsigned depth);  // io_uring_reader_linux.cpp
#else
std::unique_ptr<AsyncReader> make_uring_reader(unsigned) {
    fail(WASTE_ERR_UNSUPPORTED, "io_uring is Linux's: this system has the pread pool only");
}
#endif

std::unique_ptr<AsyncReader> make_async_reader(IoBackend backend, unsigned depth, unsigned pread_threads) {
    if (depth == 0) depth = 1;
    if (backend == IoBackend::io_uring) return make_uring_reader(depth);
    return std::make_unique<PreadReader>(depth, pread_threads);
}

std::unique_ptr<AsyncReader> make_default_reader(unsigned depth, std::string* note) {
    try {
        auto reader = make_async_reader(IoBackend::io_uring, depth);
        if (note) *note = "io_uring";
        return reader;
    } catch (const Error& error) {
        if (note) *note = std::string("pread threads (") + error.what() + ")";
        return make_async_reader(IoBackend::pread, depth);
    }
}

}  // namespace waste::platform
