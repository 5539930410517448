// RunConfigTest.cpp: what a run is configured with, and how it reaches the runner.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness/base/RunConfig.h"
#include "renderer/InputError.h"

namespace gpufuzz {
namespace {

TEST(RunConfig, BackendOptionsReachTheRunnerAsTheyWereGiven) {
  for (const BackendOptions& given :
       {BackendOptions{}, BackendOptions{"pocl", std::nullopt}, BackendOptions{"", false},
        BackendOptions{"NVIDIA CUDA", true}}) {
    const std::vector<std::string> args = backendOptionArgs(given);
    BackendOptions read;
    for (std::size_t i = 0; i < args.size(); ++i) {
      ASSERT_TRUE(readBackendOptionArg(
          args[i], [&] { return args.at(++i); }, read))
          << args[i];
    }
    EXPECT_EQ(read, given);
  }
  BackendOptions ignored;
  EXPECT_FALSE(readBackendOptionArg(
      "--policy", [] { return std::string("x"); }, ignored));
  EXPECT_THROW(parseValidationOption("yes"), InputError);
  EXPECT_THROW(resolveRunConfig(RunOverrides{"metal", {}, {}, {}}, Directives{}, ""), InputError);
  EXPECT_EQ(resolveRunConfig(RunOverrides{"opencl", {}, {}, {}}, Directives{}, "").backend,
            "opencl");
}

}  // namespace
}  // namespace gpufuzz
