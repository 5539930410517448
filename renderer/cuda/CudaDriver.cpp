// CudaDriver.cpp: loading libcuda.so.1 and initialising the driver once per process.
#include "renderer/cuda/CudaDriver.h"

#include <dlfcn.h>

#include <mutex>
#include <optional>

#include "renderer/device/DeviceError.h"

namespace gpufuzz {

namespace {

constexpr const char* kLibrary = "libcuda.so.1";

/// Sets `fn` to the symbol `name` of `library`, or leaves it null and appends the name to
/// `missing`, so that one message lists everything an old driver lacks.
template <typename Fn>
void resolve(void* library, const char* name, Fn& fn, std::string& missing) {
  fn = reinterpret_cast<Fn>(dlsym(library, name));
  if (fn != nullptr) return;
  if (!missing.empty()) missing += ", ";
  missing += name;
}

/// Loading either succeeds once (the driver) or fails once (the message): cuInit is neither
/// retried nor repeated, and every caller sees the same answer.
struct LoadResult {
  std::optional<CudaDriver> driver;
  std::string failure;
};

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
  resolve(library, "cuInit", d.init, missing);
  resolve(library, "cuGetErrorName", d.getErrorName, missing);
  resolve(library, "cuDeviceGetCount", d.deviceGetCount, missing);
  resolve(library, "cuDeviceGet", d.deviceGet, missing);
  std::string noV4;
  resolve(library, "cuCtxCreate_v4", d.ctxCreateV4, noV4);
  if (d.ctxCreateV4 == nullptr) resolve(library, "cuCtxCreate_v2", d.ctxCreateV2, missing);
  resolve(library, "cuCtxDestroy_v2", d.ctxDestroy, missing);
  resolve(library, "cuCtxSetCurrent", d.ctxSetCurrent, missing);
  resolve(library, "cuCtxPopCurrent_v2", d.ctxPopCurrent, missing);
  resolve(library, "cuStreamCreate", d.streamCreate, missing);
  resolve(library, "cuStreamDestroy_v2", d.streamDestroy, missing);
  resolve(library, "cuStreamSynchronize", d.streamSynchronize, missing);
  resolve(library, "cuStreamQuery", d.streamQuery, missing);
  resolve(library, "cuMemAlloc_v2", d.memAlloc, missing);
  resolve(library, "cuMemFree_v2", d.memFree, missing);
  resolve(library, "cuMemGetInfo_v2", d.memGetInfo, missing);
  resolve(library, "cuMemcpyHtoDAsync_v2", d.memcpyHtoDAsync, missing);
  resolve(library, "cuMemcpyDtoHAsync_v2", d.memcpyDtoHAsync, missing);
  resolve(library, "cuModuleLoadData", d.moduleLoadData, missing);
  resolve(library, "cuModuleGetFunction", d.moduleGetFunction, missing);
  resolve(library, "cuModuleUnload", d.moduleUnload, missing);
  resolve(library, "cuLaunchKernel", d.launchKernel, missing);
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
  result.driver = d;
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

const CudaDriver& cudaDriver() {
  static std::once_flag once;
  static LoadResult loaded;
  std::call_once(once, [] { loaded = load(); });
  if (!loaded.driver) throw DeviceUnavailable(loaded.failure);
  return *loaded.driver;
}

}  // namespace gpufuzz
