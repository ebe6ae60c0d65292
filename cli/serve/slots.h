// slots.h — the scheduler: --parallel generation slots (one session each)
// and a bounded --queue of requests waiting for one; a request that finds
// both full is refused (503 with Retry-After) instead of piling up threads.
// And the turn lock the slots' engine calls take one step at a time, fairly,
// so N streams interleave token by token.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "metrics.h"

namespace waste_serve {

class Slots;

// A slot held by one generation; released when destroyed.
class SlotLease {
public:
    SlotLease(Slots* slots, size_t index) : slots_(slots), index_(index) {}
    SlotLease(SlotLease&& other) noexcept : slots_(std::exchange(other.slots_, nullptr)), index_(other.index_) {}
    SlotLease& operator=(SlotLease&&) = delete;
    ~SlotLease();
    size_t index() const { return index_; }

private:
    Slots* slots_;
    size_t index_;
};

// An admitted request: it holds a place in the queue until it takes a slot
// (or gives up); released when destroyed.
class Admission {
public:
    explicit Admission(Slots* slots) : slots_(slots) {}
    Admission(Admission&& other) noexcept : slots_(std::exchange(other.slots_, nullptr)) {}
    Admission& operator=(Admission&&) = delete;
    ~Admission();
    // Waits for a free slot; none (nullopt) when the server is shutting down.
    std::optional<SlotLease> wait_for_slot();

private:
    Slots* slots_;
};

class Slots {
public:
    Slots(size_t parallel, size_t queue, Metrics& metrics);
    // A place in the system, or nullopt when every slot is busy and the
    // queue is full.
    std::optional<Admission> admit();
    // Shutdown: waiters give up, admit() refuses.
    void close();

private:
    friend class SlotLease;
    friend class Admission;
    std::mutex mutex_;
    std::condition_variable freed_;
    std::vector<bool> busy_;
    size_t queue_capacity_;
    size_t admitted_ = 0;  // waiting or holding a slot
    bool closed_ = false;
    Metrics& metrics_;
};

// A FIFO lock: each lock() waits for its ticket, so the thread that just
// released cannot overtake one already waiting (std::mutex gives no such
// promise, and one stream could starve the others).
class TurnLock {
public:
    void lock();
    void unlock();

private:
    std::mutex mutex_;
    std::condition_variable turn_;
    uint64_t next_ticket_ = 0;
    uint64_t serving_ = 0;
};

}  // namespace waste_serve
