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

/// The cuda-driver model's entry points, by the versioned names cuda.h 13.0 maps them to.
void resolveModelSymbols(void* library, CudaDriver& d) {
  std::string& m = d.modelMissing;
  resolveSymbol(library, "cuDevicePrimaryCtxRelease_v2", d.primaryCtxRelease, m);
  resolveSymbol(library, "cuCtxSynchronize", d.ctxSynchronize, m);
  resolveSymbol(library, "cuCtxGetStreamPriorityRange", d.ctxGetStreamPriorityRange, m);
  resolveSymbol(library, "cuStreamCreateWithPriority", d.streamCreateWithPriority, m);
  resolveSymbol(library, "cuStreamWaitEvent", d.streamWaitEvent, m);
  resolveSymbol(library, "cuEventCreate", d.eventCreate, m);
  resolveSymbol(library, "cuEventRecord", d.eventRecord, m);
  resolveSymbol(library, "cuEventQuery", d.eventQuery, m);
  resolveSymbol(library, "cuEventSynchronize", d.eventSynchronize, m);
  resolveSymbol(library, "cuEventDestroy_v2", d.eventDestroy, m);
  resolveSymbol(library, "cuMemPoolTrimTo", d.memPoolTrimTo, m);
  resolveSymbol(library, "cuMemPoolSetAttribute", d.memPoolSetAttribute, m);
  resolveSymbol(library, "cuMemPoolGetAttribute", d.memPoolGetAttribute, m);
  resolveSymbol(library, "cuMemAllocAsync", d.memAllocAsync, m);
  resolveSymbol(library, "cuMemHostAlloc", d.memHostAlloc, m);
  resolveSymbol(library, "cuMemFreeHost", d.memFreeHost, m);
  resolveSymbol(library, "cuMemsetD8Async", d.memsetD8Async, m);
  resolveSymbol(library, "cuMemcpyDtoDAsync_v2", d.memcpyDtoDAsync, m);
  resolveSymbol(library, "cuLaunchHostFunc", d.launchHostFunc, m);
  resolveSymbol(library, "cuStreamBeginCapture_v2", d.streamBeginCapture, m);
  resolveSymbol(library, "cuStreamEndCapture", d.streamEndCapture, m);
  resolveSymbol(library, "cuGraphInstantiateWithFlags", d.graphInstantiate, m);
  resolveSymbol(library, "cuGraphLaunch", d.graphLaunch, m);
  resolveSymbol(library, "cuGraphExecDestroy", d.graphExecDestroy, m);
  resolveSymbol(library, "cuGraphDestroy", d.graphDestroy, m);
  resolveSymbol(library, "cuMemAddressReserve", d.memAddressReserve, m);
  resolveSymbol(library, "cuMemAddressFree", d.memAddressFree, m);
  resolveSymbol(library, "cuMemCreate", d.memCreate, m);
  resolveSymbol(library, "cuMemRelease", d.memRelease, m);
  resolveSymbol(library, "cuMemMap", d.memMap, m);
  resolveSymbol(library, "cuMemUnmap", d.memUnmap, m);
  resolveSymbol(library, "cuMemSetAccess", d.memSetAccess, m);
  resolveSymbol(library, "cuMemGetAllocationGranularity", d.memGetAllocationGranularity, m);
  resolveSymbol(library, "cuDeviceCanAccessPeer", d.deviceCanAccessPeer, m);
  resolveSymbol(library, "cuCtxEnablePeerAccess", d.ctxEnablePeerAccess, m);
  resolveSymbol(library, "cuCtxDisablePeerAccess", d.ctxDisablePeerAccess, m);
  resolveSymbol(library, "cuMemcpyPeerAsync", d.memcpyPeerAsync, m);
  resolveSymbol(library, "cuMemPoolSetAccess", d.memPoolSetAccess, m);
}

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

/// Every entry point of CudaFailures.h, wrapped with the failures it can return.
void wrapEntries(CudaDriver& d) {
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
  resolveSymbol(library, "cuInit", d.init, missing);
  resolveSymbol(library, "cuGetErrorName", d.getErrorName, missing);
  resolveSymbol(library, "cuDeviceGetCount", d.deviceGetCount, missing);
  resolveSymbol(library, "cuDeviceGet", d.deviceGet, missing);
  std::string noV4;
  resolveSymbol(library, "cuCtxCreate_v4", d.ctxCreateV4, noV4);
  if (d.ctxCreateV4 == nullptr) resolveSymbol(library, "cuCtxCreate_v2", d.ctxCreateV2, missing);
  resolveSymbol(library, "cuCtxDestroy_v2", d.ctxDestroy, missing);
  resolveSymbol(library, "cuCtxSetCurrent", d.ctxSetCurrent, missing);
  resolveSymbol(library, "cuCtxPopCurrent_v2", d.ctxPopCurrent, missing);
  resolveSymbol(library, "cuStreamCreate", d.streamCreate, missing);
  resolveSymbol(library, "cuStreamDestroy_v2", d.streamDestroy, missing);
  resolveSymbol(library, "cuStreamSynchronize", d.streamSynchronize, missing);
  resolveSymbol(library, "cuStreamQuery", d.streamQuery, missing);
  resolveSymbol(library, "cuMemAlloc_v2", d.memAlloc, missing);
  resolveSymbol(library, "cuMemFree_v2", d.memFree, missing);
  resolveSymbol(library, "cuMemGetInfo_v2", d.memGetInfo, missing);
  resolveSymbol(library, "cuMemcpyHtoDAsync_v2", d.memcpyHtoDAsync, missing);
  resolveSymbol(library, "cuMemcpyDtoHAsync_v2", d.memcpyDtoHAsync, missing);
  resolveSymbol(library, "cuModuleLoadData", d.moduleLoadData, missing);
  resolveSymbol(library, "cuModuleGetFunction", d.moduleGetFunction, missing);
  resolveSymbol(library, "cuModuleUnload", d.moduleUnload, missing);
  resolveSymbol(library, "cuLaunchKernel", d.launchKernel, missing);
  resolveSymbol(library, "cuDevicePrimaryCtxRetain", d.primaryCtxRetain, d.asyncMissing);
  resolveSymbol(library, "cuMemPoolCreate", d.memPoolCreate, d.asyncMissing);
  resolveSymbol(library, "cuMemPoolDestroy", d.memPoolDestroy, d.asyncMissing);
  resolveSymbol(library, "cuMemAllocFromPoolAsync", d.memAllocFromPoolAsync, d.asyncMissing);
  resolveSymbol(library, "cuMemFreeAsync", d.memFreeAsync, d.asyncMissing);
  resolveSymbol(library, "cuDeviceGetName", d.deviceGetName, d.asyncMissing);
  resolveSymbol(library, "cuDriverGetVersion", d.driverGetVersion, d.asyncMissing);
  resolveModelSymbols(library, d);
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
