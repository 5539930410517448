// OpenClTestDevice.h: which OpenCL device the opencl suite runs on: pocl unless
// GPUFUZZ_OPENCL_DEVICE names another (`make test-gpu` runs the suite again on NVIDIA's).
// Without that device every test fails: a suite that skipped would look like a pass.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "renderer/opencl/OpenClBackend.h"

namespace gpufuzz::testing {

inline std::string openClTestDevice() {
  const char* text = std::getenv("GPUFUZZ_OPENCL_DEVICE");
  return text != nullptr && *text != '\0' ? text : "pocl";
}

/// The suite's backend, or a test failure naming why there is none.
inline std::unique_ptr<OpenClBackend> makeOpenClTestBackend(const OpenClApi& api) {
  try {
    return std::make_unique<OpenClBackend>(api, openClTestDevice());
  } catch (const std::exception& e) {
    ADD_FAILURE() << "the opencl suite needs OpenCL device '" << openClTestDevice()
                  << "': " << e.what();
    return nullptr;
  }
}

inline std::unique_ptr<OpenClBackend> makeOpenClTestBackend() {
  try {
    return makeOpenClTestBackend(openClApi());
  } catch (const std::exception& e) {
    ADD_FAILURE() << "the opencl suite needs OpenCL: " << e.what();
    return nullptr;
  }
}

}  // namespace gpufuzz::testing
