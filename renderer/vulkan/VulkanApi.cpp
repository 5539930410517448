// VulkanApi.cpp: opening the Vulkan loader and resolving its entry points.
#include "renderer/vulkan/VulkanApi.h"

#include <dlfcn.h>

#include <cstring>
#include <mutex>

#include "renderer/device/DeviceError.h"
#include "renderer/device/RuntimeSeam.h"
#include "renderer/vulkan/VulkanFailures.h"

namespace gpufuzz::vk {

namespace {

struct Opened {
  Loader loader;
  std::string failure;  // empty when the loader is usable
};

Opened open() {
  Opened opened;
  void* library = ::dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* why = ::dlerror();
    opened.failure = std::string("the Vulkan loader is not installed (dlopen libvulkan.so.1: ") +
                     (why != nullptr ? why : "unknown error") +
                     "); install libvulkan1 and a Vulkan driver (mesa-vulkan-drivers for lavapipe)";
    return opened;
  }
  Loader& l = opened.loader;
  l.vkGetInstanceProcAddr =
      reinterpret_cast<PFN_vkGetInstanceProcAddr>(::dlsym(library, "vkGetInstanceProcAddr"));
  if (l.vkGetInstanceProcAddr == nullptr) {
    opened.failure = "libvulkan.so.1 has no vkGetInstanceProcAddr";
    return opened;
  }
#define GPUFUZZ_VK_RESOLVE(name)                                                          \
  l.name = reinterpret_cast<PFN_##name>(l.vkGetInstanceProcAddr(VK_NULL_HANDLE, #name));  \
  if (l.name == nullptr && opened.failure.empty()) {                                      \
    opened.failure = "the Vulkan loader lacks " #name " (a Vulkan 1.1 loader is needed)"; \
  }
  GPUFUZZ_VK_GLOBAL(GPUFUZZ_VK_RESOLVE)
#undef GPUFUZZ_VK_RESOLVE
  return opened;
}

/// The first instance's own entry points, which the tables wrap (RuntimeSeam.h). Its device
/// calls are the loader's trampolines, the same for every instance of the process.
InstanceApi gReal;
const InstanceApi& realEntries() {
  return gReal;
}

/// Every entry point counted and scheduled; then those of VulkanFailures.h, each wrapper
/// replaced by one that can also fail with the errors it can return.
void wrapEntries(InstanceApi& api) {
#define GPUFUZZ_VK_PLAIN(name) \
  seam::wrap<seam::NoErrors, &realEntries, &InstanceApi::name, 0, seam::Name(#name)>(api);
  GPUFUZZ_VK_INSTANCE(GPUFUZZ_VK_PLAIN)
#undef GPUFUZZ_VK_PLAIN
#define GPUFUZZ_VK_WRAP(name, kinds, hostOom) \
  seam::wrap<VkErrors, &realEntries, &InstanceApi::name, kinds, seam::Name(#name)>(api);
  GPUFUZZ_VK_FAILABLE(GPUFUZZ_VK_WRAP)
#undef GPUFUZZ_VK_WRAP
}

/// Whether `api` holds the same entry points as the wrapped ones.
bool sameEntries(const InstanceApi& a, const InstanceApi& b) {
  bool same = true;
#define GPUFUZZ_VK_SAME(name) same = same && a.name == b.name;
  GPUFUZZ_VK_INSTANCE(GPUFUZZ_VK_SAME)
#undef GPUFUZZ_VK_SAME
  return same;
}

}  // namespace

const Loader& loader() {
  static const Opened opened = open();
  if (!opened.failure.empty()) throw DeviceUnavailable(opened.failure);
  return opened.loader;
}

InstanceApi loadInstanceApi(const Loader& l, VkInstance instance) {
  InstanceApi api;
#define GPUFUZZ_VK_RESOLVE(name) \
  api.name = reinterpret_cast<PFN_##name>(l.vkGetInstanceProcAddr(instance, #name));
  GPUFUZZ_VK_INSTANCE(GPUFUZZ_VK_RESOLVE)
#undef GPUFUZZ_VK_RESOLVE
  // Every core entry point must be there; the debug messenger is an extension's.
#define GPUFUZZ_VK_REQUIRE(name)                                            \
  if (api.name == nullptr && std::strstr(#name, "DebugUtils") == nullptr) { \
    throw DeviceUnavailable("the Vulkan instance lacks " #name              \
                            " (a Vulkan 1.1 driver is needed)");            \
  }
  GPUFUZZ_VK_INSTANCE(GPUFUZZ_VK_REQUIRE)
#undef GPUFUZZ_VK_REQUIRE
  // A later instance whose entry points differ keeps its own, unwrapped: marks then fail none of
  // its calls, which the marked runs' tests would show.
  static std::mutex mutex;
  const std::lock_guard lock(mutex);
  static bool first = true;
  if (first) {
    gReal = api;
    first = false;
  }
  if (!sameEntries(api, gReal)) return api;
  wrapEntries(api);
  return api;
}

std::string resultName(VkResult result) {
  switch (result) {
#define GPUFUZZ_VK_NAME(code) \
  case code:                  \
    return #code;
    GPUFUZZ_VK_NAME(VK_SUCCESS)
    GPUFUZZ_VK_NAME(VK_NOT_READY)
    GPUFUZZ_VK_NAME(VK_TIMEOUT)
    GPUFUZZ_VK_NAME(VK_INCOMPLETE)
    GPUFUZZ_VK_NAME(VK_ERROR_OUT_OF_HOST_MEMORY)
    GPUFUZZ_VK_NAME(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    GPUFUZZ_VK_NAME(VK_ERROR_INITIALIZATION_FAILED)
    GPUFUZZ_VK_NAME(VK_ERROR_DEVICE_LOST)
    GPUFUZZ_VK_NAME(VK_ERROR_MEMORY_MAP_FAILED)
    GPUFUZZ_VK_NAME(VK_ERROR_LAYER_NOT_PRESENT)
    GPUFUZZ_VK_NAME(VK_ERROR_EXTENSION_NOT_PRESENT)
    GPUFUZZ_VK_NAME(VK_ERROR_FEATURE_NOT_PRESENT)
    GPUFUZZ_VK_NAME(VK_ERROR_INCOMPATIBLE_DRIVER)
    GPUFUZZ_VK_NAME(VK_ERROR_TOO_MANY_OBJECTS)
    GPUFUZZ_VK_NAME(VK_ERROR_FRAGMENTED_POOL)
    GPUFUZZ_VK_NAME(VK_ERROR_OUT_OF_POOL_MEMORY)
    GPUFUZZ_VK_NAME(VK_ERROR_VALIDATION_FAILED_EXT)
    GPUFUZZ_VK_NAME(VK_ERROR_UNKNOWN)
#undef GPUFUZZ_VK_NAME
    default:
      return "VkResult " + std::to_string(static_cast<int>(result));
  }
}

}  // namespace gpufuzz::vk
