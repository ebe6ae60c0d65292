// memory_reserve.h — a counted allowance inside the memory plan: the
// snapshot reserve (bytes) and the planned session slots (sessions). A take
// succeeds while the total stays within the capacity; what was taken is
// given back when the thing it paid for is freed.
//
// Atomic, so that a snapshot may be freed from any thread, even while
// another thread runs an engine call (the only engine-free operation the C
// API allows concurrently), and so that two takes racing for the last bytes
// cannot both succeed.
#pragma once

#include <atomic>
#include <cstdint>

namespace waste::runtime {

class MemoryReserve {
public:
    explicit MemoryReserve(uint64_t capacity) : capacity_(capacity) {}
    MemoryReserve(const MemoryReserve&) = delete;
    MemoryReserve& operator=(const MemoryReserve&) = delete;

    // Takes amount if it fits; false (nothing taken) if not.
    bool try_take(uint64_t amount) {
        uint64_t used = used_.load(std::memory_order_relaxed);
        do {
            if (amount > capacity_ || used > capacity_ - amount) return false;
        } while (!used_.compare_exchange_weak(used, used + amount, std::memory_order_relaxed));
        return true;
    }
    void give_back(uint64_t amount) { used_.fetch_sub(amount, std::memory_order_relaxed); }
    uint64_t used() const { return used_.load(std::memory_order_relaxed); }
    uint64_t capacity() const { return capacity_; }

private:
    const uint64_t capacity_;
    std::atomic<uint64_t> used_{0};
};

}  // namespace waste::runtime
