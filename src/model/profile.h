// profile.h — where a token's time goes, by category, for `waste bench`.
//
// Exclusive timing with a stack: entering a category pauses the one it is
// nested in, so the categories add up to the total. Off (a null Profile*)
// it costs one branch per scope.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>

namespace waste::model {

enum class ProfileCategory : int {
    trunk_matvec,  // trunk projections (every matvec/matmul on trunk weights)
    lut_build,     // lookup tables of the expert matvec
    lut_apply,     // the lookups themselves (and the expert activation)
    kda,           // KDA conv, norms, recurrence
    mla,           // MLA absorbed attention
    gqa,           // grouped-query attention (Qwen3): q/k norms, RoPE, softmax over the cache
    router,        // router scores and top-k selection
    lm_head,       // final norm and lm_head
    expert_wait,   // waiting for expert records (cache misses: disk reads)
    other,         // embedding, norms, residuals, AttnRes
    count
};

const char* profile_category_name(ProfileCategory category);

class Profile {
public:
    using Clock = std::chrono::steady_clock;
    void enter(ProfileCategory category);
    void leave();
    void start() { stack_size_ = 0, last_ = Clock::now(), enter(ProfileCategory::other); }
    void stop() { leave(); }
    double seconds(ProfileCategory category) const { return seconds_[static_cast<int>(category)]; }
    void reset() { seconds_.fill(0.0); }

private:
    std::array<double, static_cast<int>(ProfileCategory::count)> seconds_{};
    std::array<ProfileCategory, 16> stack_{};
    size_t stack_size_ = 0;
    Clock::time_point last_{};
};

class ProfileScope {
public:
    ProfileScope(Profile* profile, ProfileCategory category) : profile_(profile) {
        if (profile_) profile_->enter(category);
    }
    ~ProfileScope() {
        if (profile_) profile_->leave();
    }
    ProfileScope(const ProfileScope&) = delete;
    ProfileScope& operator=(const ProfileScope&) = delete;

private:
    Profile* profile_;
};

}  // namespace waste::model
