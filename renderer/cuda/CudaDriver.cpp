// CudaDriver.cpp: loading libcuda.so.1 and initialising the driver once per process.
#include "renderer/cuda/CudaDriver.h"

#include <algorithm>

#include "renderer/cuda/CudaFailures.h"
#include "renderer/device/RuntimeLibrary.h"
#include "renderer/device/RuntimeSeam.h"

namespace gpufuzz {

namespace {

constexpr const char* kLibrary = "libcuda.so.1";

using LoadResult = RuntimeLoad<CudaDriver>;

/// Every entry point of the table, in the order they are resolved: X(CudaDriver member, its
/// versioned symbol, whose it is: Required by every backend, V4 or else V2 for cuCtxCreate, Async
/// for cuda-async, Model for the cuda-driver model).
#define GPUFUZZ_CU_ENTRIES(X)                                          \
  X(init, cuInit, Required)                                            \
  X(getErrorName, cuGetErrorName, Required)                            \
  X(deviceGetCount, cuDeviceGetCount, Required)                        \
  X(deviceGet, cuDeviceGet, Required)                                  \
  X(ctxCreateV4, cuCtxCreate_v4, V4)                                   \
  X(ctxCreateV2, cuCtxCreate_v2, V2)                                   \
  X(ctxDestroy, cuCtxDestroy_v2, Required)                             \
  X(ctxSetCurrent, cuCtxSetCurrent, Required)                          \
  X(ctxPopCurrent, cuCtxPopCurrent_v2, Required)                       \
  X(streamCreate, cuStreamCreate, Required)                            \
  X(streamDestroy, cuStreamDestroy_v2, Required)                       \
  X(streamSynchronize, cuStreamSynchronize, Required)                  \
  X(streamQuery, cuStreamQuery, Required)                              \
  X(memAlloc, cuMemAlloc_v2, Required)                                 \
  X(memFree, cuMemFree_v2, Required)                                   \
  X(memGetInfo, cuMemGetInfo_v2, Required)                             \
  X(memcpyHtoDAsync, cuMemcpyHtoDAsync_v2, Required)                   \
  X(memcpyDtoHAsync, cuMemcpyDtoHAsync_v2, Required)                   \
  X(moduleLoadData, cuModuleLoadData, Required)                        \
  X(moduleGetFunction, cuModuleGetFunction, Required)                  \
  X(moduleUnload, cuModuleUnload, Required)                            \
  X(launchKernel, cuLaunchKernel, Required)                            \
  X(primaryCtxRetain, cuDevicePrimaryCtxRetain, Async)                 \
  X(memPoolCreate, cuMemPoolCreate, Async)                             \
  X(memPoolDestroy, cuMemPoolDestroy, Async)                           \
  X(memAllocFromPoolAsync, cuMemAllocFromPoolAsync, Async)             \
  X(memFreeAsync, cuMemFreeAsync, Async)                               \
  X(deviceGetName, cuDeviceGetName, Async)                             \
  X(driverGetVersion, cuDriverGetVersion, Async)                       \
  X(primaryCtxRelease, cuDevicePrimaryCtxRelease_v2, Model)            \
  X(ctxSynchronize, cuCtxSynchronize, Model)                           \
  X(ctxGetStreamPriorityRange, cuCtxGetStreamPriorityRange, Model)     \
  X(streamCreateWithPriority, cuStreamCreateWithPriority, Model)       \
  X(streamWaitEvent, cuStreamWaitEvent, Model)                         \
  X(eventCreate, cuEventCreate, Model)                                 \
  X(eventRecord, cuEventRecord, Model)                                 \
  X(eventQuery, cuEventQuery, Model)                                   \
  X(eventSynchronize, cuEventSynchronize, Model)                       \
  X(eventDestroy, cuEventDestroy_v2, Model)                            \
  X(memPoolTrimTo, cuMemPoolTrimTo, Model)                             \
  X(memPoolSetAttribute, cuMemPoolSetAttribute, Model)                 \
  X(memPoolGetAttribute, cuMemPoolGetAttribute, Model)                 \
  X(memAllocAsync, cuMemAllocAsync, Model)                             \
  X(memHostAlloc, cuMemHostAlloc, Model)                               \
  X(memFreeHost, cuMemFreeHost, Model)                                 \
  X(memsetD8Async, cuMemsetD8Async, Model)                             \
  X(memcpyDtoDAsync, cuMemcpyDtoDAsync_v2, Model)                      \
  X(launchHostFunc, cuLaunchHostFunc, Model)                           \
  X(streamBeginCapture, cuStreamBeginCapture_v2, Model)                \
  X(streamEndCapture, cuStreamEndCapture, Model)                       \
  X(graphInstantiate, cuGraphInstantiateWithFlags, Model)              \
  X(graphLaunch, cuGraphLaunch, Model)                                 \
  X(graphExecDestroy, cuGraphExecDestroy, Model)                       \
  X(graphDestroy, cuGraphDestroy, Model)                               \
  X(memAddressReserve, cuMemAddressReserve, Model)                     \
  X(memAddressFree, cuMemAddressFree, Model)                           \
  X(memCreate, cuMemCreate, Model)                                     \
  X(memRelease, cuMemRelease, Model)                                   \
  X(memMap, cuMemMap, Model)                                           \
  X(memUnmap, cuMemUnmap, Model)                                       \
  X(memSetAccess, cuMemSetAccess, Model)                               \
  X(memGetAllocationGranularity, cuMemGetAllocationGranularity, Model) \
  X(deviceCanAccessPeer, cuDeviceCanAccessPeer, Model)                 \
  X(ctxEnablePeerAccess, cuCtxEnablePeerAccess, Model)                 \
  X(ctxDisablePeerAccess, cuCtxDisablePeerAccess, Model)               \
  X(memcpyPeerAsync, cuMemcpyPeerAsync, Model)                         \
  X(memPoolSetAccess, cuMemPoolSetAccess, Model)

enum class Group : uint8_t { Required, V4, V2, Async, Model };

/// The driver's own entry points, which the process's table wraps (RuntimeSeam.h).
CudaDriver gReal;
const CudaDriver& realEntries() {
  return gReal;
}

/// The driver's answer for a failed call: it reports host and device exhaustion alike.
struct CuErrors {
  template <typename R, typename... A>
  static R fail(FailureKind /*kind*/, A... /*args*/) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
};

/// Every entry point counted and scheduled; then those of CudaFailures.h, each wrapper replaced
/// by one that can also fail with what the entry point returns.
void wrapEntries(CudaDriver& d) {
#define GPUFUZZ_CU_PLAIN(member, symbol, group) \
  seam::wrap<seam::NoErrors, &realEntries, &CudaDriver::member, 0, seam::Name(#symbol)>(d);
  GPUFUZZ_CU_ENTRIES(GPUFUZZ_CU_PLAIN)
#undef GPUFUZZ_CU_PLAIN
#define GPUFUZZ_CU_WRAP(member, kinds, name, symbol) \
  seam::wrap<CuErrors, &realEntries, &CudaDriver::member, kinds, seam::Name(#symbol)>(d);
  GPUFUZZ_CU_FAILABLE(GPUFUZZ_CU_WRAP)
#undef GPUFUZZ_CU_WRAP
}

LoadResult load() {
  LoadResult result;
  // Never closed: the driver stays loaded for the life of the process, as contexts may outlive
  // any one backend.
  void* library = dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* why = dlerror();
    result.failure = std::string("no CUDA driver: ") + kLibrary + " not found (" +
                     (why != nullptr ? why : "no reason given") +
                     "); install the NVIDIA driver or use the sim backend";
    return result;
  }

  CudaDriver d;
  std::string missing;
  std::string noV4;
  const auto bucket = [&](Group group) -> std::string& {
    switch (group) {
      case Group::V4:
        return noV4;
      case Group::Async:
        return d.asyncMissing;
      case Group::Model:
        return d.modelMissing;
      default:
        return missing;
    }
  };
  // cuCtxCreate_v2 only where the driver predates cuCtxCreate_v4.
#define GPUFUZZ_CU_RESOLVE(member, symbol, group)                    \
  if (Group::group != Group::V2 || d.ctxCreateV4 == nullptr) {       \
    resolveSymbol(library, #symbol, d.member, bucket(Group::group)); \
  }
  GPUFUZZ_CU_ENTRIES(GPUFUZZ_CU_RESOLVE)
#undef GPUFUZZ_CU_RESOLVE
  if (!missing.empty()) {
    result.failure = std::string("CUDA driver too old: ") + kLibrary + " lacks " + missing;
    return result;
  }

  const CUresult init = d.init(0);
  if (init == CUDA_ERROR_NO_DEVICE) {
    result.failure = "no CUDA device (cuInit: CUDA_ERROR_NO_DEVICE)";
    return result;
  }
  if (init != CUDA_SUCCESS) {
    result.failure = "CUDA driver unusable: cuInit: " + d.errorName(init);
    return result;
  }
  const CUresult count = d.deviceGetCount(&d.deviceCount);
  if (count != CUDA_SUCCESS) {
    result.failure = "CUDA driver unusable: cuDeviceGetCount: " + d.errorName(count);
    return result;
  }
  if (d.deviceCount < 1) {
    result.failure = "no CUDA device";
    return result;
  }
  gReal = d;
  wrapEntries(d);
  result.api = d;
  return result;
}

}  // namespace

CUresult CudaDriver::ctxCreate(CUcontext* ctx, unsigned int flags, CUdevice device) const {
  if (ctxCreateV4 != nullptr) return ctxCreateV4(ctx, nullptr, flags, device);
  return ctxCreateV2(ctx, flags, device);
}

std::string CudaDriver::errorName(CUresult error) const {
  const char* name = nullptr;
  if (getErrorName(error, &name) == CUDA_SUCCESS && name != nullptr) return name;
  return "CUDA error " + std::to_string(static_cast<int>(error));
}

std::string CudaDriver::describeDevice(CUdevice device) const {
  std::string text = "CUDA device " + std::to_string(device);
  char name[256] = {};
  if (deviceGetName != nullptr && deviceGetName(name, sizeof name - 1, device) == CUDA_SUCCESS) {
    text = name;
  }
  int version = 0;
  if (driverGetVersion != nullptr && driverGetVersion(&version) == CUDA_SUCCESS) {
    text +=
        ", driver " + std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
  }
  return text;
}

const CudaDriver& cudaDriver() {
  return loadOnce<CudaDriver>([] { return load(); });
}

void CudaDriver::leaveDeviceMemory(CUdevice device, uint64_t leave) const {
  const auto check = [this](CUresult result, const char* call) {
    if (result != CUDA_SUCCESS) {
      throw DeviceError(CallPoint::BufAlloc,
                        std::string(call) + " (--device-memory): " + errorName(result));
    }
  };
  if (primaryCtxRetain == nullptr) {
    throw DeviceError(CallPoint::BufAlloc,
                      "--device-memory: this driver lacks cuDevicePrimaryCtxRetain");
  }
  CUcontext primary = nullptr;
  check(primaryCtxRetain(&primary, device), "cuDevicePrimaryCtxRetain");
  check(ctxSetCurrent(primary), "cuCtxSetCurrent");
  // Big allocations first, halved when the driver refuses one: a few calls reach the target
  // within a chunk of 1 MiB.
  constexpr size_t kSmallest = size_t{1} << 20;
  size_t chunk = SIZE_MAX;
  for (int round = 0; round < 4096; ++round) {
    size_t free = 0;
    size_t total = 0;
    check(memGetInfo(&free, &total), "cuMemGetInfo");
    if (free <= leave || free - leave < kSmallest) break;
    chunk = std::min<size_t>(chunk, free - leave);
    if (chunk < kSmallest) break;
    CUdeviceptr taken = 0;
    const CUresult result = memAlloc(&taken, chunk);
    if (result == CUDA_ERROR_OUT_OF_MEMORY) {
      chunk /= 2;
      continue;
    }
    check(result, "cuMemAlloc_v2");
  }
  check(ctxSetCurrent(nullptr), "cuCtxSetCurrent");
}

}  // namespace gpufuzz
