// DriverMemory.h: the device's free memory as the driver counts it (cuMemGetInfo), read through
// a probe context of its own so that no backend's contexts are disturbed.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>

#include "renderer/cuda/CudaDriver.h"

namespace gpufuzz::testing {

class DriverMemory {
 public:
  DriverMemory() : driver_(cudaDriver()) {
    CUdevice device = 0;
    EXPECT_EQ(driver_.deviceGet(&device, 0), CUDA_SUCCESS);
    EXPECT_EQ(driver_.ctxCreate(&probe_, 0, device), CUDA_SUCCESS);
    CUcontext popped = nullptr;
    EXPECT_EQ(driver_.ctxPopCurrent(&popped), CUDA_SUCCESS);
  }
  ~DriverMemory() { EXPECT_EQ(driver_.ctxDestroy(probe_), CUDA_SUCCESS); }
  DriverMemory(const DriverMemory&) = delete;
  DriverMemory& operator=(const DriverMemory&) = delete;

  /// Free bytes on device 0 now.
  int64_t freeBytes() const {
    size_t free = 0;
    size_t total = 0;
    EXPECT_EQ(driver_.ctxSetCurrent(probe_), CUDA_SUCCESS);
    EXPECT_EQ(driver_.memGetInfo(&free, &total), CUDA_SUCCESS);
    CUcontext popped = nullptr;
    EXPECT_EQ(driver_.ctxPopCurrent(&popped), CUDA_SUCCESS);
    return static_cast<int64_t>(free);
  }

 private:
  const CudaDriver& driver_;
  CUcontext probe_ = nullptr;
};

}  // namespace gpufuzz::testing
