#include "model/profile.h"

namespace waste::model {

const char* profile_category_name(ProfileCategory category) {
    switch (category) {
        case ProfileCategory::trunk_matvec: return "trunk_matvec";
        case ProfileCategory::lut_build: return "lut_build";
        case ProfileCategory::lut_apply: return "lut_apply";
        case ProfileCategory::kda: return "kda";
        case ProfileCategory::mla: return "mla";
        case ProfileCategory::gqa: return "gqa";
        case ProfileCategory::router: return "router";
        case ProfileCategory::lm_head: return "lm_head";
        case ProfileCategory::expert_wait: return "expert_wait";
        case ProfileCategory::other: return "other";
        case ProfileCategory::count: break;
    }
    return "?";
}

void Profile::enter(ProfileCategory category) {
    const Clock::time_point now = Clock::now();
    if (stack_size_ > 0) seconds_[static_cast<int>(stack_[stack_size_ - 1])] += std::chrono::duration<double>(now - last_).count();
    last_ = now;
    if (stack_size_ < stack_.size()) stack_[stack_size_] = category;
    ++stack_size_;
}

void Profile::leave() {
    const Clock::time_point now = Clock::now();
    if (stack_size_ > 0 && stack_size_ <= stack_.size())
        seconds_[static_cast<int>(stack_[stack_size_ - 1])] += std::chrono::duration<double>(now - last_).count();
    last_ = now;
    if (stack_size_ > 0) --stack_size_;
}

}  // namespace waste::model
