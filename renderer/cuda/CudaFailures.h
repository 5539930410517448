// CudaFailures.h: which CUDA driver entry points a mark can fail, and how (docs/failures.md). The
// process's driver table (CudaDriver.cpp) and the interposer preloaded into targets
// (renderer/interpose) wrap the same list, so the runner and a target fail the same calls.
#pragma once

#include "renderer/device/RuntimeSeam.h"

namespace gpufuzz {

/// Calls that make memory, a context, a stream or an event: out of device or host memory.
inline constexpr seam::Kinds kCuMakes = seam::kOom | seam::kHostOom;

// Every entry point a program's operation makes, with the failures it can return. Queries, waits
// and releases stay the driver's own, and so does cuStreamEndCapture: an end that never reached
// the driver would leave the stream capturing, which no real failure does. Calls that enqueue
// work run out of host memory. Each row: X(CudaDriver member, kinds, the name cuGetProcAddress
// takes, the versioned symbol that cuda.h 13.0 maps the name to).
#define GPUFUZZ_CU_FAILABLE(X)                                                                  \
  X(ctxCreateV4, kCuMakes, cuCtxCreate, cuCtxCreate_v4)                                         \
  X(ctxCreateV2, kCuMakes, cuCtxCreate, cuCtxCreate_v2)                                         \
  X(primaryCtxRetain, kCuMakes, cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain)             \
  X(streamCreate, kCuMakes, cuStreamCreate, cuStreamCreate)                                     \
  X(streamCreateWithPriority, kCuMakes, cuStreamCreateWithPriority, cuStreamCreateWithPriority) \
  X(eventCreate, kCuMakes, cuEventCreate, cuEventCreate)                                        \
  X(memAlloc, kCuMakes, cuMemAlloc, cuMemAlloc_v2)                                              \
  X(memAllocAsync, kCuMakes, cuMemAllocAsync, cuMemAllocAsync)                                  \
  X(memAllocFromPoolAsync, kCuMakes, cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync)          \
  X(memPoolCreate, kCuMakes, cuMemPoolCreate, cuMemPoolCreate)                                  \
  X(memCreate, kCuMakes, cuMemCreate, cuMemCreate)                                              \
  X(memAddressReserve, kCuMakes, cuMemAddressReserve, cuMemAddressReserve)                      \
  X(moduleLoadData, kCuMakes, cuModuleLoadData, cuModuleLoadData)                               \
  X(graphInstantiate, kCuMakes, cuGraphInstantiateWithFlags, cuGraphInstantiateWithFlags)       \
  X(memHostAlloc, seam::kHostOom, cuMemHostAlloc, cuMemHostAlloc)                               \
  X(moduleGetFunction, seam::kHostOom, cuModuleGetFunction, cuModuleGetFunction)                \
  X(memcpyHtoDAsync, seam::kHostOom, cuMemcpyHtoDAsync, cuMemcpyHtoDAsync_v2)                   \
  X(memcpyDtoHAsync, seam::kHostOom, cuMemcpyDtoHAsync, cuMemcpyDtoHAsync_v2)                   \
  X(memcpyDtoDAsync, seam::kHostOom, cuMemcpyDtoDAsync, cuMemcpyDtoDAsync_v2)                   \
  X(memcpyPeerAsync, seam::kHostOom, cuMemcpyPeerAsync, cuMemcpyPeerAsync)                      \
  X(memsetD8Async, seam::kHostOom, cuMemsetD8Async, cuMemsetD8Async)                            \
  X(launchKernel, seam::kHostOom, cuLaunchKernel, cuLaunchKernel)                               \
  X(launchHostFunc, seam::kHostOom, cuLaunchHostFunc, cuLaunchHostFunc)                         \
  X(eventRecord, seam::kHostOom, cuEventRecord, cuEventRecord)                                  \
  X(streamWaitEvent, seam::kHostOom, cuStreamWaitEvent, cuStreamWaitEvent)                      \
  X(graphLaunch, seam::kHostOom, cuGraphLaunch, cuGraphLaunch)                                  \
  X(memMap, seam::kHostOom, cuMemMap, cuMemMap)                                                 \
  X(memSetAccess, seam::kHostOom, cuMemSetAccess, cuMemSetAccess)                               \
  X(memPoolSetAccess, seam::kHostOom, cuMemPoolSetAccess, cuMemPoolSetAccess)                   \
  X(ctxEnablePeerAccess, seam::kHostOom, cuCtxEnablePeerAccess, cuCtxEnablePeerAccess)

}  // namespace gpufuzz
