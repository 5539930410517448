// VulkanLayer.cpp: VK_LAYER_GPUFUZZ_failures, the Vulkan layer in libgpufuzz-interpose.so
// (docs/failures.md, Targets). The harness enables it in every target through VK_ADD_LAYER_PATH
// and VK_INSTANCE_LAYERS; its manifest, beside the programs, names this library and the
// negotiation function below. A Vulkan program's calls reach the driver through the loader's
// dispatch tables, not through symbols a preload could replace, so a layer is the one place to
// fail them.
//
// The layer wraps the device entry points of VulkanFailures.h. A wrapper asks the thread's armed
// mark (RuntimeSeam.h); when its call is due, it returns the VkResult of the failure without
// calling down the chain, else it calls the next layer's or the driver's entry point. Every other
// call of the program goes past the layer: it hands out the next layer's pointers for them.
#define VK_NO_PROTOTYPES
#include <vulkan/vk_layer.h>
#include <vulkan/vulkan.h>

#include <array>
#include <cstring>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <unordered_map>

#include "renderer/device/RuntimeSeam.h"
#include "renderer/vulkan/VulkanFailures.h"

namespace gpufuzz::vk {
namespace {

struct Row {
  const char* name;
  seam::Kinds kinds;
};
constexpr Row kRows[] = {
#define GPUFUZZ_VK_ROW(name, kinds, hostOom) \
  {#name, static_cast<seam::Kinds>((kinds) | ((hostOom) ? seam::kHostOom : 0))},
    GPUFUZZ_VK_FAILABLE(GPUFUZZ_VK_ROW)
#undef GPUFUZZ_VK_ROW
};
constexpr std::size_t kRowCount = std::size(kRows);

/// A dispatchable handle's key: the loader's dispatch table, which a device shares with its
/// queues and command buffers, and an instance with its physical devices.
void* keyOf(const void* handle) {
  return *static_cast<void* const*>(handle);
}

struct Instance {
  VkInstance handle = VK_NULL_HANDLE;
  PFN_vkGetInstanceProcAddr next = nullptr;
  PFN_vkDestroyInstance destroy = nullptr;
};
struct Device {
  PFN_vkGetDeviceProcAddr next = nullptr;
  PFN_vkDestroyDevice destroy = nullptr;
  std::array<PFN_vkVoidFunction, kRowCount> calls{};
};

/// Instances and devices by key. A call takes the lock only to find its next entry point.
struct Chains {
  std::shared_mutex lock;
  std::unordered_map<void*, Instance> instances;
  std::unordered_map<void*, Device> devices;
};
Chains& chains() {
  static Chains c;
  return c;
}

Instance instanceOf(const void* handle) {
  Chains& c = chains();
  const std::shared_lock guard(c.lock);
  const auto it = c.instances.find(keyOf(handle));
  return it == c.instances.end() ? Instance{} : it->second;
}

PFN_vkVoidFunction nextCall(const void* handle, std::size_t row) {
  Chains& c = chains();
  const std::shared_lock guard(c.lock);
  const auto it = c.devices.find(keyOf(handle));
  return it == c.devices.end() ? nullptr : it->second.calls[row];
}

/// The armed mark's error, when the call of row `row` is the one it fails.
std::optional<VkResult> failedAsMarked(std::size_t row) {
  if (!seam::detail::armed().on || !seam::detail::due(kRows[row].kinds, kRows[row].name)) {
    return std::nullopt;
  }
  return VkErrors::fail<VkResult>(seam::detail::armed().failure.kind);
}

template <std::size_t I, typename Fn>
struct Wrapper;
template <std::size_t I, typename First, typename... A>
struct Wrapper<I, VkResult(VKAPI_PTR*)(First, A...)> {
  static VkResult VKAPI_CALL call(First first, A... args) {
    if (const std::optional<VkResult> failed = failedAsMarked(I)) return *failed;
    const auto next = reinterpret_cast<VkResult(VKAPI_PTR*)(First, A...)>(nextCall(first, I));
    if (next == nullptr) return VK_ERROR_INITIALIZATION_FAILED;
    return next(first, args...);
  }
};

using RowTypes = std::tuple<
#define GPUFUZZ_VK_TYPE(name, kinds, hostOom) PFN_##name,
    GPUFUZZ_VK_FAILABLE(GPUFUZZ_VK_TYPE)
#undef GPUFUZZ_VK_TYPE
        void>;

template <std::size_t... I>
std::array<PFN_vkVoidFunction, kRowCount> allWrappers(std::index_sequence<I...>) {
  return {reinterpret_cast<PFN_vkVoidFunction>(
      &Wrapper<I, std::tuple_element_t<I, RowTypes>>::call)...};
}
const std::array<PFN_vkVoidFunction, kRowCount>& wrappers() {
  static const auto table = allWrappers(std::make_index_sequence<kRowCount>{});
  return table;
}

std::size_t rowNamed(const char* name) {
  for (std::size_t i = 0; i < kRowCount; ++i) {
    if (std::strcmp(kRows[i].name, name) == 0) return i;
  }
  return kRowCount;
}

template <typename Info>
Info* linkInfo(const void* next, VkStructureType type) {
  for (auto* info = static_cast<const Info*>(next); info != nullptr;
       info = static_cast<const Info*>(info->pNext)) {
    if (info->sType == type && info->function == VK_LAYER_LINK_INFO) return const_cast<Info*>(info);
  }
  return nullptr;
}

VkResult VKAPI_CALL createInstance(const VkInstanceCreateInfo* info,
                                   const VkAllocationCallbacks* allocator, VkInstance* instance) {
  auto* link = linkInfo<VkLayerInstanceCreateInfo>(info->pNext,
                                                   VK_STRUCTURE_TYPE_LOADER_INSTANCE_CREATE_INFO);
  if (link == nullptr || link->u.pLayerInfo == nullptr) return VK_ERROR_INITIALIZATION_FAILED;
  const PFN_vkGetInstanceProcAddr next = link->u.pLayerInfo->pfnNextGetInstanceProcAddr;
  const auto create =
      reinterpret_cast<PFN_vkCreateInstance>(next(VK_NULL_HANDLE, "vkCreateInstance"));
  if (create == nullptr) return VK_ERROR_INITIALIZATION_FAILED;
  link->u.pLayerInfo = link->u.pLayerInfo->pNext;
  const VkResult made = create(info, allocator, instance);
  if (made != VK_SUCCESS) return made;
  Instance entry;
  entry.handle = *instance;
  entry.next = next;
  entry.destroy = reinterpret_cast<PFN_vkDestroyInstance>(next(*instance, "vkDestroyInstance"));
  Chains& c = chains();
  const std::unique_lock guard(c.lock);
  c.instances[keyOf(*instance)] = entry;
  return VK_SUCCESS;
}

void VKAPI_CALL destroyInstance(VkInstance instance, const VkAllocationCallbacks* allocator) {
  if (instance == VK_NULL_HANDLE) return;
  const Instance entry = instanceOf(instance);
  {
    Chains& c = chains();
    const std::unique_lock guard(c.lock);
    c.instances.erase(keyOf(instance));
  }
  if (entry.destroy != nullptr) entry.destroy(instance, allocator);
}

constexpr std::size_t kCreateDevice = 0;
static_assert(std::string_view(kRows[kCreateDevice].name) == "vkCreateDevice");

VkResult VKAPI_CALL createDevice(VkPhysicalDevice physical, const VkDeviceCreateInfo* info,
                                 const VkAllocationCallbacks* allocator, VkDevice* device) {
  if (const std::optional<VkResult> failed = failedAsMarked(kCreateDevice)) return *failed;
  auto* link =
      linkInfo<VkLayerDeviceCreateInfo>(info->pNext, VK_STRUCTURE_TYPE_LOADER_DEVICE_CREATE_INFO);
  const Instance owner = instanceOf(physical);
  if (link == nullptr || link->u.pLayerInfo == nullptr || owner.next == nullptr) {
    return VK_ERROR_INITIALIZATION_FAILED;
  }
  const PFN_vkGetDeviceProcAddr next = link->u.pLayerInfo->pfnNextGetDeviceProcAddr;
  const auto create = reinterpret_cast<PFN_vkCreateDevice>(
      link->u.pLayerInfo->pfnNextGetInstanceProcAddr(owner.handle, "vkCreateDevice"));
  if (create == nullptr) return VK_ERROR_INITIALIZATION_FAILED;
  link->u.pLayerInfo = link->u.pLayerInfo->pNext;
  const VkResult made = create(physical, info, allocator, device);
  if (made != VK_SUCCESS) return made;
  Device entry;
  entry.next = next;
  entry.destroy = reinterpret_cast<PFN_vkDestroyDevice>(next(*device, "vkDestroyDevice"));
  for (std::size_t i = 0; i < kRowCount; ++i)
    entry.calls[i] = next(*device, kRows[i].name);
  Chains& c = chains();
  const std::unique_lock guard(c.lock);
  c.devices[keyOf(*device)] = entry;
  return VK_SUCCESS;
}

void VKAPI_CALL destroyDevice(VkDevice device, const VkAllocationCallbacks* allocator) {
  if (device == VK_NULL_HANDLE) return;
  PFN_vkDestroyDevice destroy = nullptr;
  {
    Chains& c = chains();
    const std::unique_lock guard(c.lock);
    const auto it = c.devices.find(keyOf(device));
    if (it == c.devices.end()) return;
    destroy = it->second.destroy;
    c.devices.erase(it);
  }
  if (destroy != nullptr) destroy(device, allocator);
}

PFN_vkVoidFunction VKAPI_CALL getDeviceProcAddr(VkDevice device, const char* name);

/// This layer's own entry point for `name`, or null for one it passes by.
PFN_vkVoidFunction ownCall(const char* name) {
  const std::string_view n(name);
  if (n == "vkGetDeviceProcAddr") return reinterpret_cast<PFN_vkVoidFunction>(&getDeviceProcAddr);
  if (n == "vkDestroyDevice") return reinterpret_cast<PFN_vkVoidFunction>(&destroyDevice);
  if (n == "vkCreateDevice") return reinterpret_cast<PFN_vkVoidFunction>(&createDevice);
  const std::size_t row = rowNamed(name);
  return row == kRowCount ? nullptr : wrappers()[row];
}

PFN_vkVoidFunction VKAPI_CALL getDeviceProcAddr(VkDevice device, const char* name) {
  if (device == VK_NULL_HANDLE) return nullptr;
  PFN_vkGetDeviceProcAddr next = nullptr;
  bool has = false;
  {
    Chains& c = chains();
    const std::shared_lock guard(c.lock);
    const auto it = c.devices.find(keyOf(device));
    if (it == c.devices.end()) return nullptr;
    next = it->second.next;
    const std::size_t row = rowNamed(name);
    has = row == kRowCount || it->second.calls[row] != nullptr;
  }
  if (std::string_view(name) != "vkCreateDevice") {
    if (PFN_vkVoidFunction own = ownCall(name); own != nullptr && has) return own;
  }
  return next(device, name);
}

PFN_vkVoidFunction VKAPI_CALL getInstanceProcAddr(VkInstance instance, const char* name) {
  const std::string_view n(name);
  if (n == "vkGetInstanceProcAddr") {
    return reinterpret_cast<PFN_vkVoidFunction>(&getInstanceProcAddr);
  }
  if (n == "vkCreateInstance") return reinterpret_cast<PFN_vkVoidFunction>(&createInstance);
  if (n == "vkDestroyInstance") return reinterpret_cast<PFN_vkVoidFunction>(&destroyInstance);
  if (PFN_vkVoidFunction own = ownCall(name); own != nullptr) return own;
  if (instance == VK_NULL_HANDLE) return nullptr;
  const Instance entry = instanceOf(instance);
  return entry.next == nullptr ? nullptr : entry.next(instance, name);
}

}  // namespace
}  // namespace gpufuzz::vk

/// The layer's one exported function, named in its manifest: the loader asks it for the layer's
/// two lookup functions. Its name is the project's, so a preloaded library defines no Vulkan name.
extern "C" __attribute__((visibility("default"))) VkResult VKAPI_CALL
gpufuzz_vkNegotiateLoaderLayerInterfaceVersion(VkNegotiateLayerInterface* version) {
  if (version == nullptr || version->sType != LAYER_NEGOTIATE_INTERFACE_STRUCT ||
      version->loaderLayerInterfaceVersion < 2) {
    return VK_ERROR_INITIALIZATION_FAILED;
  }
  version->loaderLayerInterfaceVersion = 2;
  version->pfnGetInstanceProcAddr = &gpufuzz::vk::getInstanceProcAddr;
  version->pfnGetDeviceProcAddr = &gpufuzz::vk::getDeviceProcAddr;
  version->pfnGetPhysicalDeviceProcAddr = nullptr;
  return VK_SUCCESS;
}
