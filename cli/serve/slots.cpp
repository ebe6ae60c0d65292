#include "slots.h"

namespace waste_serve {

Slots::Slots(size_t parallel, size_t queue, Metrics& metrics)
    : busy_(parallel, false), queue_capacity_(queue), metrics_(metrics) {}

std::optional<Admission> Slots::admit() {
    std::lock_guard lock(mutex_);
    if (closed_ || admitted_ >= busy_.size() + queue_capacity_) return std::nullopt;
    ++admitted_;
    ++metrics_.queued;
    return Admission(this);
}

void Slots::close() {
    std::lock_guard lock(mutex_);
    closed_ = true;
    freed_.notify_all();
}

Admission::~Admission() {
    if (!slots_) return;
    std::lock_guard lock(slots_->mutex_);
    --slots_->admitted_;
    --slots_->metrics_.queued;
}

std::optional<SlotLease> Admission::wait_for_slot() {
    Slots* slots = std::exchange(slots_, nullptr);
    std::unique_lock lock(slots->mutex_);
    for (;;) {
        if (slots->closed_) {
            --slots->admitted_;
            --slots->metrics_.queued;
            return std::nullopt;
        }
        for (size_t i = 0; i < slots->busy_.size(); ++i)
            if (!slots->busy_[i]) {
                slots->busy_[i] = true;
                --slots->metrics_.queued;
                ++slots->metrics_.active;
                return SlotLease(slots, i);
            }
        slots->freed_.wait(lock);
    }
}

SlotLease::~SlotLease() {
    if (!slots_) return;
    std::lock_guard lock(slots_->mutex_);
    slots_->busy_[index_] = false;
    --slots_->admitted_;
    --slots_->metrics_.active;
    slots_->freed_.notify_one();
}

void TurnLock::lock() {
    std::unique_lock lock(mutex_);
    const uint64_t ticket = next_ticket_++;
    turn_.wait(lock, [&] { return serving_ == ticket; });
}

void TurnLock::unlock() {
    std::lock_guard lock(mutex_);
    ++serving_;
    turn_.notify_all();
}

}  // namespace waste_serve
