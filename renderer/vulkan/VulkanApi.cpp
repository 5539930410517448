// VulkanApi.cpp: opening the Vulkan loader and resolving its entry points.
#include "renderer/vulkan/VulkanApi.h"

#include <dlfcn.h>

#include <cstring>
#include <mutex>

#include "renderer/device/DeviceError.h"
#include "renderer/device/RuntimeSeam.h"

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

/// Vulkan's answer for a failed call: the VkResult of its kind.
struct VkErrors {
  template <typename R, typename... A>
  static R fail(FailureKind kind, A... /*args*/) {
    switch (kind) {
      case FailureKind::DeviceMemory:
        return VK_ERROR_OUT_OF_DEVICE_MEMORY;
      case FailureKind::HostMemory:
        return VK_ERROR_OUT_OF_HOST_MEMORY;
      case FailureKind::DeviceLost:
        return VK_ERROR_DEVICE_LOST;
    }
    return VK_ERROR_UNKNOWN;
  }
};

/// Every entry point of an operation that returns a VkResult, wrapped with the errors its
/// specification lists: device memory for a create, an allocation, a recording or a submit; a
/// lost device for a submit and every wait (docs/failures.md). Host memory fails where the driver
/// allocates it, through the executor's allocation callbacks. Destroys, frees and commands stay
/// the loader's own.
void wrapEntries(InstanceApi& api) {
  using seam::kLost;
  using seam::kOom;
  // Host memory runs out in the driver's own allocations instead (VulkanAllocator.h).
  constexpr seam::Kinds kWait = kOom | kLost;
#define GPUFUZZ_VK_WRAP(name, kinds) \
  seam::wrap<VkErrors, &realEntries, &InstanceApi::name, kinds, seam::Name(#name)>(api)
  GPUFUZZ_VK_WRAP(vkCreateDevice, kWait);
  GPUFUZZ_VK_WRAP(vkCreateBuffer, kOom);
  GPUFUZZ_VK_WRAP(vkAllocateMemory, kOom);
  GPUFUZZ_VK_WRAP(vkBindBufferMemory, kOom);
  GPUFUZZ_VK_WRAP(vkMapMemory, kOom);
  GPUFUZZ_VK_WRAP(vkCreateShaderModule, kOom);
  GPUFUZZ_VK_WRAP(vkCreateDescriptorSetLayout, kOom);
  GPUFUZZ_VK_WRAP(vkCreatePipelineLayout, kOom);
  GPUFUZZ_VK_WRAP(vkCreateComputePipelines, kOom);
  GPUFUZZ_VK_WRAP(vkCreateDescriptorPool, kOom);
  GPUFUZZ_VK_WRAP(vkAllocateDescriptorSets, kOom);
  GPUFUZZ_VK_WRAP(vkCreateCommandPool, kOom);
  GPUFUZZ_VK_WRAP(vkAllocateCommandBuffers, kOom);
  GPUFUZZ_VK_WRAP(vkBeginCommandBuffer, kOom);
  GPUFUZZ_VK_WRAP(vkEndCommandBuffer, kOom);
  GPUFUZZ_VK_WRAP(vkCreateFence, kOom);
  GPUFUZZ_VK_WRAP(vkResetFences, kOom);
  GPUFUZZ_VK_WRAP(vkCreateSemaphore, kOom);
  GPUFUZZ_VK_WRAP(vkSignalSemaphore, kOom);
  GPUFUZZ_VK_WRAP(vkResetCommandBuffer, kOom);
  GPUFUZZ_VK_WRAP(vkResetCommandPool, kOom);
  GPUFUZZ_VK_WRAP(vkQueueSubmit, kWait);
  GPUFUZZ_VK_WRAP(vkQueueWaitIdle, kWait);
  GPUFUZZ_VK_WRAP(vkDeviceWaitIdle, kWait);
  GPUFUZZ_VK_WRAP(vkWaitForFences, kWait);
  GPUFUZZ_VK_WRAP(vkGetFenceStatus, kWait);
  GPUFUZZ_VK_WRAP(vkWaitSemaphores, kWait);
  GPUFUZZ_VK_WRAP(vkGetSemaphoreCounterValue, kWait);
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
