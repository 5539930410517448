// OpenClFailures.h: which OpenCL entry points a mark can fail, and how (docs/failures.md). The
// process's loader table (OpenClApi.cpp) and the interposer preloaded into targets
// (renderer/interpose) wrap the same list, so the runner and a target fail the same calls.
#pragma once

#include <type_traits>

#include "renderer/device/RuntimeSeam.h"
#include "renderer/opencl/OpenClApi.h"

namespace gpufuzz {

/// OpenCL's answers for a failed call: the error code, or a null object with the code in its
/// errcode_ret. `OomCode` is device memory's: CL_MEM_OBJECT_ALLOCATION_FAILURE where the call can
/// return it, else CL_OUT_OF_RESOURCES.
template <cl_int OomCode>
struct ClErrors {
  template <typename R, typename... A>
  static R fail(FailureKind kind, A... args) {
    const cl_int code = kind == FailureKind::HostMemory ? CL_OUT_OF_HOST_MEMORY : OomCode;
    if constexpr (std::is_same_v<R, cl_int>) {
      return code;
    } else {
      (setErrorCode(args, code), ...);
      return R{};
    }
  }
  template <typename T>
  static void setErrorCode(T arg, cl_int code) {
    if constexpr (std::is_same_v<T, cl_int*>) {
      if (arg != nullptr) *arg = code;
    }
  }
};
using ClAllocErrors = ClErrors<CL_MEM_OBJECT_ALLOCATION_FAILURE>;
using ClResourceErrors = ClErrors<CL_OUT_OF_RESOURCES>;

// Every entry point a program's operation makes, with the failures its specification lets it
// return. Queries, retains and releases stay the loader's own. Each row:
// X(errors, OpenClApi member, the entry point's name, kinds).
#define GPUFUZZ_CL_FAILABLE(X)                                                                \
  X(ClResourceErrors, createContext, clCreateContext, seam::kOom | seam::kHostOom)            \
  X(ClResourceErrors, createCommandQueue, clCreateCommandQueue, seam::kOom | seam::kHostOom)  \
  X(ClResourceErrors, createCommandQueueWithProperties, clCreateCommandQueueWithProperties,   \
    seam::kOom | seam::kHostOom)                                                              \
  X(ClAllocErrors, createBuffer, clCreateBuffer, seam::kOom | seam::kHostOom)                 \
  X(ClAllocErrors, createSubBuffer, clCreateSubBuffer, seam::kOom | seam::kHostOom)           \
  X(ClAllocErrors, createImage, clCreateImage, seam::kOom | seam::kHostOom)                   \
  X(ClAllocErrors, svmAlloc, clSVMAlloc, seam::kOom | seam::kHostOom)                         \
  X(ClAllocErrors, enqueueWriteBuffer, clEnqueueWriteBuffer, seam::kOom | seam::kHostOom)     \
  X(ClAllocErrors, enqueueReadBuffer, clEnqueueReadBuffer, seam::kOom | seam::kHostOom)       \
  X(ClAllocErrors, enqueueFillBuffer, clEnqueueFillBuffer, seam::kOom | seam::kHostOom)       \
  X(ClAllocErrors, enqueueCopyBuffer, clEnqueueCopyBuffer, seam::kOom | seam::kHostOom)       \
  X(ClAllocErrors, enqueueWriteImage, clEnqueueWriteImage, seam::kOom | seam::kHostOom)       \
  X(ClAllocErrors, enqueueReadImage, clEnqueueReadImage, seam::kOom | seam::kHostOom)         \
  X(ClAllocErrors, enqueueNDRangeKernel, clEnqueueNDRangeKernel, seam::kOom | seam::kHostOom) \
  X(ClResourceErrors, enqueueSVMMemFill, clEnqueueSVMMemFill, seam::kHostOom)                 \
  X(ClResourceErrors, enqueueSVMMemcpy, clEnqueueSVMMemcpy, seam::kHostOom)                   \
  X(ClResourceErrors, setMemObjectDestructorCallback, clSetMemObjectDestructorCallback,       \
    seam::kHostOom)                                                                           \
  X(ClResourceErrors, createProgramWithSource, clCreateProgramWithSource, seam::kHostOom)     \
  X(ClResourceErrors, createProgramWithBinary, clCreateProgramWithBinary, seam::kHostOom)     \
  X(ClResourceErrors, buildProgram, clBuildProgram, seam::kHostOom)                           \
  X(ClResourceErrors, createKernel, clCreateKernel, seam::kHostOom)                           \
  X(ClResourceErrors, setKernelArg, clSetKernelArg, seam::kHostOom)                           \
  X(ClResourceErrors, flush, clFlush, seam::kHostOom)                                         \
  X(ClResourceErrors, finish, clFinish, seam::kHostOom)                                       \
  X(ClResourceErrors, waitForEvents, clWaitForEvents, seam::kHostOom)                         \
  X(ClResourceErrors, createUserEvent, clCreateUserEvent, seam::kHostOom)                     \
  X(ClResourceErrors, setUserEventStatus, clSetUserEventStatus, seam::kHostOom)               \
  X(ClResourceErrors, setEventCallback, clSetEventCallback, seam::kHostOom)                   \
  X(ClResourceErrors, enqueueMarkerWithWaitList, clEnqueueMarkerWithWaitList, seam::kHostOom) \
  X(ClResourceErrors, enqueueBarrierWithWaitList, clEnqueueBarrierWithWaitList, seam::kHostOom)

}  // namespace gpufuzz
