// DefaultJobsTest.cpp: the default --jobs where each context a sequence makes is a driver
// context (cuda, NVIDIA's OpenCL), and nowhere else.
#include <gtest/gtest.h>

#include "harness/cli/Session.h"

namespace gpufuzz {
namespace {

TEST(DefaultJobs, CudaRunsTwoChildrenPerGpu) {
  EXPECT_EQ(driverContextJobs("cuda", "NVIDIA H200, driver 13.0", 1), 2U);
  EXPECT_EQ(driverContextJobs("cuda", "NVIDIA H200, driver 13.0", 4), 8U);
  EXPECT_EQ(driverContextJobs("cuda", "", 0), 2U);  // no count known: one GPU
}

TEST(DefaultJobs, NvidiasOpenClIsCappedAndOtherPlatformsAreNot) {
  EXPECT_EQ(driverContextJobs("opencl", "NVIDIA CUDA / NVIDIA H200 / driver 580.159.04", 1), 2U);
  EXPECT_EQ(driverContextJobs("opencl", "nvidia cuda / h200", 1), 2U);
  EXPECT_FALSE(driverContextJobs("opencl", "Portable Computing Language / cpu-haswell", 1));
  EXPECT_FALSE(driverContextJobs("opencl", "rusticl / llvmpipe", 1));
}

TEST(DefaultJobs, CudaAsyncRunsFourFreshProcessesPerGpuAndOnePersistentOnePerCore) {
  EXPECT_EQ(driverContextJobs("cuda-async", "NVIDIA H200, driver 13.0", 1), 4U);
  EXPECT_EQ(driverContextJobs("cuda-async", "NVIDIA H200, driver 13.0", 1, 1), 4U);
  EXPECT_EQ(driverContextJobs("cuda-async", "NVIDIA H200, driver 13.0", 2), 8U);
  EXPECT_FALSE(driverContextJobs("cuda-async", "NVIDIA H200, driver 13.0", 1, 2));
  EXPECT_FALSE(driverContextJobs("cuda-async", "NVIDIA H200, driver 13.0", 1, 1000));
  // --persistent changes nothing where every context is a driver context.
  EXPECT_EQ(driverContextJobs("cuda", "NVIDIA H200, driver 13.0", 1, 1000), 2U);
  EXPECT_EQ(driverContextJobs("opencl", "NVIDIA CUDA / NVIDIA H200", 1, 1000), 2U);
}

TEST(DefaultJobs, BackendsWhoseContextsAreCheapRunAsManyAsCores) {
  EXPECT_FALSE(driverContextJobs("sim", "sim", 0));
  EXPECT_FALSE(driverContextJobs("vulkan", "llvmpipe (LLVM 15.0.6)", 1));
}

}  // namespace
}  // namespace gpufuzz
