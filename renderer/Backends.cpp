// Backends.cpp: the registry of backends and the factory.
#include "renderer/Backends.h"

#include <array>

#include "base/InputError.h"
#include "renderer/device/DeviceError.h"
#include "renderer/sim/SimBackend.h"
#if GPUFUZZ_HAVE_CUDA
#include "renderer/cuda/CudaAsyncBackend.h"
#include "renderer/cuda/CudaBackend.h"
#include "renderer/cuda/CudaDriver.h"
#include "renderer/cuda/CudaDriverExecutor.h"
#endif
#if GPUFUZZ_HAVE_OPENCL
#include "renderer/opencl/OpenClBackend.h"
#include "renderer/opencl/OpenClModelExecutor.h"
#include "renderer/opencl/OpenClPreload.h"
#endif
#if GPUFUZZ_HAVE_VULKAN
#include "renderer/vulkan/VulkanBackend.h"
#include "renderer/vulkan/VulkanExecutor.h"
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
std::unique_ptr<ModelExecutor> makeOpenClExecutor(std::string_view, const BackendOptions& options) {
  return makeOpenClModelExecutor(options.device);
}
#endif
/// The runtime models the opencl backend executes (OpenClModelExecutor.h).
constexpr std::array<std::string_view, 1> kOpenClModels = {"opencl"};

#if GPUFUZZ_HAVE_CUDA
std::unique_ptr<Backend> makeCuda(const BackendOptions&) {
  return makeCudaBackend();
}
std::unique_ptr<Backend> makeCudaAsync(const BackendOptions&) {
  return makeCudaAsyncBackend();
}
/// --device for CUDA: an ordinal, 0 when empty.
int cudaOrdinal(const BackendOptions& options) {
  if (options.device.empty()) return 0;
  if (options.device.find_first_not_of("0123456789") != std::string::npos ||
      options.device.size() > 4) {
    throw InputError("--device " + options.device + ": a CUDA device is an ordinal (0, 1, ...)");
  }
  return std::stoi(options.device);
}
std::unique_ptr<ModelExecutor> makeCudaModelExecutor(std::string_view, const BackendOptions& o) {
  return makeCudaDriverExecutor("cuda", cudaOrdinal(o));
}
std::unique_ptr<ModelExecutor> makeCudaAsyncModelExecutor(std::string_view,
                                                          const BackendOptions& o) {
  return makeCudaDriverExecutor("cuda-async", cudaOrdinal(o));
}
#endif
/// The runtime models both CUDA backends execute, with one executor (CudaDriverExecutor.h).
constexpr std::array<std::string_view, 1> kCudaModels = {"cuda-driver"};

/// The runtime model the vulkan backend executes (VulkanExecutor.h).
constexpr std::array<std::string_view, 1> kVulkanModels = {"vulkan"};

/// The profile of each backend, from what limits its runtime (bench/RESULTS.md, "`--jobs` on the
/// GPU" and "The seed's hang on cuda-async"):
/// - cuda: each context is a CUDA context, and the driver makes them one at a time; more
///   children only stretch every operation's latency, so 2 a GPU run the most sequences a second.
/// - cuda-async: contexts are cheap, but a fresh process's start, cuInit and the primary context's
///   retain, serializes the same way: 4 children run as many executions a second as 16, with a
///   third of the p99. With --persistent a process starts once for many sequences: one a core.
/// - opencl: NVIDIA's makes a CUDA context per OpenCL context, as cuda; pocl and rusticl do not.
/// - sim: the seed's fault is planted where the renderer runs, and threads take turns by a
///   seeded schedule.
/// - Every GPU backend spreads its children over the GPUs: CUDA's by CUDA_VISIBLE_DEVICES, the
///   others by GPUFUZZ_DEVICE_INDEX on NVIDIA's GPUs.
using Spread = BackendProfile::Spread;
struct NamedProfile {
  std::string_view name;
  BackendProfile profile;
};
constexpr NamedProfile kProfiles[] = {
    // name, {jobs per device, only on, fresh only, spread over GPUs, sanitizer, default faults,
    //        deterministic, lost device, bounds device memory}
    {"sim", {0, "", false, Spread::None, false, "max-26.5.0", true, true, true}},
    {"cuda", {2, "", false, Spread::CudaVisibleDevices, true, "none", false, false, true}},
    {"cuda-async", {4, "", true, Spread::CudaVisibleDevices, true, "none", false, false, true}},
    {"opencl", {2, "nvidia", false, Spread::DeviceIndex, false, "none", false, false, true}},
    {"vulkan", {0, "", false, Spread::DeviceIndex, false, "none", false, true, true}},
};

constexpr BackendProfile profileOf(std::string_view name) {
  for (const NamedProfile& p : kProfiles) {
    if (p.name == name) return p.profile;
  }
  return BackendProfile{};
}

/// A backend of this build; `probeInChild` for runtimes a forking process must not load.
constexpr BackendInfo builtBackend(std::string_view name,
                                   std::unique_ptr<Backend> (*make)(const BackendOptions&),
                                   bool probeInChild = false, void (*preload)() = nullptr) {
  return BackendInfo{name, profileOf(name), true, probeInChild, make, {}, preload, {}, nullptr};
}
constexpr BackendInfo missingBackend(std::string_view name, std::string_view why) {
  return BackendInfo{name, profileOf(name), false, false, nullptr, why, nullptr, {}, nullptr};
}

/// cuda when a CUDA device is usable in this process, else sim.
constexpr std::array<std::string_view, 2> kAutoBackends = {"cuda", "sim"};
/// `info`, executing the runtime models `models` with `make` (null where not built).
constexpr BackendInfo withModels(BackendInfo info, std::span<const std::string_view> models,
                                 std::unique_ptr<ModelExecutor> (*make)(std::string_view,
                                                                        const BackendOptions&)) {
  info.models = models;
  info.makeExecutor = info.built ? make : nullptr;
  return info;
}

const std::array kRegistry = {
    builtBackend("sim", makeSim),
#if GPUFUZZ_HAVE_CUDA
    withModels(builtBackend("cuda", makeCuda), kCudaModels, makeCudaModelExecutor),
    withModels(builtBackend("cuda-async", makeCudaAsync), kCudaModels, makeCudaAsyncModelExecutor),
#else
    withModels(missingBackend("cuda", kNoCudaToolkit), kCudaModels, nullptr),
    withModels(missingBackend("cuda-async", kNoCudaToolkit), kCudaModels, nullptr),
#endif
#if GPUFUZZ_HAVE_OPENCL
    withModels(builtBackend("opencl", makeOpenCl, /*probeInChild=*/true, preloadOpenClLibraries),
               kOpenClModels, makeOpenClExecutor),
#else
    withModels(missingBackend("opencl",
                              "this gpufuzz was built without the opencl backend (no CL/cl.h at "
                              "configure time); install opencl-headers (tools/install-deps) and "
                              "rebuild"),
               kOpenClModels, nullptr),
#endif
#if GPUFUZZ_HAVE_VULKAN
    withModels(
        builtBackend("vulkan", makeVulkanBackend, /*probeInChild=*/true, preloadVulkanLibraries),
        kVulkanModels, makeVulkanExecutor),
#else
    withModels(missingBackend("vulkan",
                              "this gpufuzz was built without the vulkan backend (no glslc or "
                              "Vulkan headers at configure time); install glslc and libvulkan-dev "
                              "(tools/install-deps) and rebuild"),
               kVulkanModels, nullptr),
#endif
};

}  // namespace

std::span<const BackendInfo> backendRegistry() {
  return kRegistry;
}

const BackendProfile* findBackendProfile(std::string_view name) {
  for (const BackendInfo& b : kRegistry) {
    if (b.name == name) return &b.profile;
  }
  return nullptr;
}

std::span<const std::string_view> autoBackends() {
  return kAutoBackends;
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

bool isRuntimeModel(std::string_view model) {
  return !backendForModel(model).empty();
}

bool backendRunsModel(std::string_view backend, std::string_view model) {
  for (const BackendInfo& b : kRegistry) {
    if (b.name != backend) continue;
    for (const std::string_view m : b.models) {
      if (m == model) return true;
    }
  }
  return false;
}

std::string_view backendForModel(std::string_view model) {
  for (const BackendInfo& b : kRegistry) {
    if (backendRunsModel(b.name, model)) return b.name;
  }
  return {};
}

std::string backendsOfModelText(std::string_view model) {
  std::string names;
  for (const BackendInfo& b : kRegistry) {
    if (!backendRunsModel(b.name, model)) continue;
    names += (names.empty() ? "" : ", ") + std::string(b.name);
  }
  return names;
}

std::unique_ptr<ModelExecutor> makeModelExecutor(std::string_view backend, std::string_view model,
                                                 const BackendOptions& options) {
  const std::string_view name = backend == "auto" ? backendForModel(model) : backend;
  const BackendInfo& info = backendInfo(name.empty() ? backend : name);
  if (!backendRunsModel(info.name, model)) {
    throw InputError("the " + std::string(info.name) + " backend does not execute model " +
                     std::string(model) +
                     (isRuntimeModel(model) ? " (it runs on " + backendsOfModelText(model) + ")"
                                            : std::string()));
  }
  if (!info.built || info.makeExecutor == nullptr) {
    throw DeviceUnavailable("the " + std::string(info.name) +
                            " backend is not part of this build: " + std::string(info.notBuilt));
  }
  return info.makeExecutor(model, options);
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
    for (std::size_t i = 0; i + 1 < kAutoBackends.size(); ++i) {
      try {
        return makeBackend(kAutoBackends[i], options);
      } catch (const DeviceUnavailable&) {
      }
    }
    return makeBackend(kAutoBackends.back(), options);
  }
  const BackendInfo& info = backendInfo(name);
  if (!info.built) {
    throw DeviceUnavailable("the " + std::string(name) +
                            " backend is not part of this build: " + std::string(info.notBuilt));
  }
  return info.make(options);
}

}  // namespace gpufuzz
