// CudaBackendKinds.h: the two CUDA backends as the suites see them: how to make each, what its
// driver calls are named, and where their contracts differ (docs/sequences.md: a buffer freed after
// its context's destroy is an error on cuda, whose cuCtxDestroy took its memory, and valid on
// cuda-async, whose pool outlives the destroy). CudaStreamBackendTest runs one backend of the
// kind it is given; each suite binary instantiates it for its backend.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <ostream>
#include <string>

#include "renderer/cuda/CudaAsyncBackend.h"
#include "renderer/cuda/CudaBackend.h"
#include "renderer/device/Backend.h"
#include "renderer/device/DeviceError.h"

namespace gpufuzz::gpuscenes {

struct CudaBackendKind {
  const char* name;   // Backend::name()
  const char* label;  // in test names, which allow letters, digits and '_' only
  std::unique_ptr<Backend> (*make)(int ordinal);
  const char* allocCall;
  const char* freeCall;
  /// The call destroyContext names in its handle errors.
  const char* destroyCall;
  /// A free after the buffer's context was destroyed: valid, or a DeviceError.
  bool freeAfterDestroyIsValid;
  /// What allocBuffer(ctx, 0) throws, as measured; null where nothing was measured.
  const char* zeroBytesError;
};

inline const CudaBackendKind kCuda{
    "cuda",      "cuda",         makeCudaBackend, "cuMemAlloc",
    "cuMemFree", "cuCtxDestroy", false,           "cuMemAlloc: CUDA_ERROR_INVALID_VALUE"};
inline const CudaBackendKind kCudaAsync{"cuda-async",
                                        "cuda_async",
                                        makeCudaAsyncBackend,
                                        "cuMemAllocFromPoolAsync",
                                        "cuMemFreeAsync",
                                        "cuMemPoolDestroy",
                                        true,
                                        nullptr};

/// How GoogleTest names a kind in test lists ("# GetParam() = cuda-async").
inline void PrintTo(const CudaBackendKind& kind, std::ostream* out) {
  *out << kind.name;
}

inline std::string kindLabel(const ::testing::TestParamInfo<CudaBackendKind>& info) {
  return info.param.label;
}

/// A fresh backend of GetParam()'s kind for every test. Without a usable CUDA device every test
/// fails: a GPU run that skipped would look like a pass.
class CudaStreamBackendTest : public ::testing::TestWithParam<CudaBackendKind> {
 protected:
  void SetUp() override {
    try {
      backend_ = GetParam().make(0);
    } catch (const DeviceUnavailable& e) {
      FAIL() << "these tests need a usable CUDA device: " << e.what();
    }
  }

  const CudaBackendKind& kind() const { return GetParam(); }

  std::unique_ptr<Backend> backend_;
};

}  // namespace gpufuzz::gpuscenes
