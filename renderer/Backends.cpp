// Backends.cpp: the registry of backends and the factory.
#include "renderer/Backends.h"

#include <array>

#include "renderer/InputError.h"
#include "renderer/device/DeviceError.h"
#include "renderer/sim/SimBackend.h"
#if GPUFUZZ_HAVE_CUDA
#include "renderer/cuda/CudaAsyncBackend.h"
#include "renderer/cuda/CudaBackend.h"
#include "renderer/cuda/CudaDriver.h"
#endif
#if GPUFUZZ_HAVE_OPENCL
#include "renderer/opencl/OpenClBackend.h"
#endif
#if GPUFUZZ_HAVE_VULKAN
#include "renderer/vulkan/VulkanBackend.h"
#include "renderer/vulkan/VulkanPreload.h"
#endif

namespace gpufuzz {

namespace {

constexpr std::string_view kNoCudaToolkit =
    "this gpufuzz was built without the CUDA backends (no CUDA toolkit at configure time); "
    "rebuild where nvcc is installed";

std::unique_ptr<Backend> makeSim(const BackendOptions&) {
  return makeSimBackend();
}

#if GPUFUZZ_HAVE_OPENCL
std::unique_ptr<Backend> makeOpenCl(const BackendOptions& options) {
  return makeOpenClBackend(options.device);
}
#endif

#if GPUFUZZ_HAVE_CUDA
std::unique_ptr<Backend> makeCuda(const BackendOptions&) {
  return makeCudaBackend();
}
std::unique_ptr<Backend> makeCudaAsync(const BackendOptions&) {
  return makeCudaAsyncBackend();
}
#endif

/// A backend of this build; `probeInChild` for runtimes a forking process must not load.
constexpr BackendInfo builtBackend(std::string_view name,
                                   std::unique_ptr<Backend> (*make)(const BackendOptions&),
                                   bool probeInChild = false, void (*preload)() = nullptr) {
  return BackendInfo{name, true, probeInChild, make, {}, preload};
}
constexpr BackendInfo missingBackend(std::string_view name, std::string_view why) {
  return BackendInfo{name, false, false, nullptr, why};
}

const std::array kRegistry = {
    builtBackend("sim", makeSim),
#if GPUFUZZ_HAVE_CUDA
    builtBackend("cuda", makeCuda),
    builtBackend("cuda-async", makeCudaAsync),
#else
    missingBackend("cuda", kNoCudaToolkit),
    missingBackend("cuda-async", kNoCudaToolkit),
#endif
#if GPUFUZZ_HAVE_OPENCL
    builtBackend("opencl", makeOpenCl, /*probeInChild=*/true),
#else
    missingBackend("opencl",
                   "this gpufuzz was built without the opencl backend (no CL/cl.h at configure "
                   "time); install opencl-headers (tools/install-deps) and rebuild"),
#endif
#if GPUFUZZ_HAVE_VULKAN
    builtBackend("vulkan", makeVulkanBackend, /*probeInChild=*/true, preloadVulkanLibraries),
#else
    missingBackend("vulkan",
                   "this gpufuzz was built without the vulkan backend (no glslc or Vulkan headers "
                   "at configure time); install glslc and libvulkan-dev (tools/install-deps) and "
                   "rebuild"),
#endif
};

}  // namespace

std::span<const BackendInfo> backendRegistry() {
  return kRegistry;
}

std::string backendNamesText() {
  std::string names;
  for (const BackendInfo& b : kRegistry)
    names += std::string(b.name) + ", ";
  return names + "auto";
}

const BackendInfo& backendInfo(std::string_view name) {
  for (const BackendInfo& b : kRegistry) {
    if (b.name == name) return b;
  }
  throw InputError("unknown backend '" + std::string(name) + "' (expected " + backendNamesText() +
                   ")");
}

void preloadRuntime(std::string_view name) {
  for (const BackendInfo& b : kRegistry) {
    if (b.name == name && b.built && b.preload != nullptr) b.preload();
  }
}

bool cudaBackendBuilt() {
  return GPUFUZZ_HAVE_CUDA != 0;
}

int cudaDeviceCount() {
#if GPUFUZZ_HAVE_CUDA
  try {
    return cudaDriver().deviceCount;
  } catch (const DeviceUnavailable&) {
    return 0;
  }
#else
  return 0;
#endif
}

std::unique_ptr<Backend> makeBackend(std::string_view name, const BackendOptions& options) {
  if (name == "auto") {
    try {
      return makeBackend("cuda", options);
    } catch (const DeviceUnavailable&) {
      return makeSimBackend();
    }
  }
  const BackendInfo& info = backendInfo(name);
  if (!info.built) {
    throw DeviceUnavailable("the " + std::string(name) +
                            " backend is not part of this build: " + std::string(info.notBuilt));
  }
  return info.make(options);
}

}  // namespace gpufuzz
