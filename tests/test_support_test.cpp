// test_support_test.cpp — the rule that keeps a test from passing by
// skipping (issue 35): under scripts/test.sh (WASTE_REQUIRE_ORACLES set) a
// check the machine cannot run fails, unless $WASTE_ALLOW_SKIP names its
// kind; in a developer's plain ctest it skips. Exact: the rule is a yes/no.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "test_support.h"

namespace {

// Sets an environment variable for the scope and puts the old value back.
class ScopedEnv {
public:
    ScopedEnv(const char* name, const char* value) : name_(name) {
        if (const char* old = std::getenv(name)) old_ = old;
        if (value) ::setenv(name, value, 1);
        else ::unsetenv(name);
    }
    ~ScopedEnv() {
        if (old_) ::setenv(name_, old_->c_str(), 1);
        else ::unsetenv(name_);
    }
    ScopedEnv(const ScopedEnv&) = delete;
    ScopedEnv& operator=(const ScopedEnv&) = delete;

private:
    const char* name_;
    std::optional<std::string> old_;
};

TEST(TestSupport, AnEnvironmentSkipFailsUnderTheTestCommandUnlessNamed) {
    {
        ScopedEnv required("WASTE_REQUIRE_ORACLES", nullptr);
        ScopedEnv allowed("WASTE_ALLOW_SKIP", nullptr);
        EXPECT_TRUE(waste_test::environment_skip_allowed("cgroup")) << "a developer's ctest skips";
    }
    ScopedEnv required("WASTE_REQUIRE_ORACLES", "1");
    {
        ScopedEnv allowed("WASTE_ALLOW_SKIP", nullptr);
        EXPECT_FALSE(waste_test::environment_skip_allowed("cgroup")) << "scripts/test.sh fails it";
    }
    {
        ScopedEnv allowed("WASTE_ALLOW_SKIP", "o_direct,cgroup");
        EXPECT_TRUE(waste_test::environment_skip_allowed("cgroup"));
        EXPECT_TRUE(waste_test::environment_skip_allowed("o_direct"));
        EXPECT_FALSE(waste_test::environment_skip_allowed("io_uring"));
        EXPECT_FALSE(waste_test::environment_skip_allowed("group")) << "whole names only";
    }
    {
        ScopedEnv allowed("WASTE_ALLOW_SKIP", "");
        EXPECT_FALSE(waste_test::environment_skip_allowed("cgroup"));
    }
}

}  // namespace
