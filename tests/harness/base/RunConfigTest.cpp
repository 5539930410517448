// RunConfigTest.cpp: what a run is configured with (tests/harness/cli/RunnerArgsTest.cpp: how
// it reaches the runner).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness/base/RunConfig.h"
#include "renderer/InputError.h"

namespace gpufuzz {
namespace {

TEST(RunConfig, BackendNamesAreChecked) {
  EXPECT_THROW(resolveRunConfig(RunOverrides{"metal", {}, {}, {}}, Directives{}, ""), InputError);
  EXPECT_EQ(resolveRunConfig(RunOverrides{"opencl", {}, {}, {}}, Directives{}, "").backend,
            "opencl");
}

}  // namespace
}  // namespace gpufuzz
