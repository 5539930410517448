// VulkanDeviceMemory.cpp: taking a Vulkan device's memory for --device-memory.
#include "renderer/vulkan/VulkanDeviceMemory.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "renderer/device/DeviceError.h"

namespace gpufuzz::vk {

namespace {

[[noreturn]] void failed(const char* call, VkResult result) {
  throw DeviceError(CallPoint::BufAlloc,
                    std::string(call) + " (--device-memory): " + resultName(result));
}

bool hasBudget(const InstanceApi& api, VkPhysicalDevice physical) {
  uint32_t count = 0;
  if (api.vkEnumerateDeviceExtensionProperties(physical, nullptr, &count, nullptr) != VK_SUCCESS) {
    return false;
  }
  std::vector<VkExtensionProperties> extensions(count);
  if (api.vkEnumerateDeviceExtensionProperties(physical, nullptr, &count, extensions.data()) !=
      VK_SUCCESS) {
    return false;
  }
  return std::any_of(extensions.begin(), extensions.end(), [](const VkExtensionProperties& e) {
    return std::strcmp(e.extensionName, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME) == 0;
  });
}

/// The heap's free bytes: its budget less its use, or its size less `taken`.
uint64_t freeBytes(const InstanceApi& api, VkPhysicalDevice physical, uint32_t heap, bool budget,
                   uint64_t size, uint64_t taken) {
  if (!budget) return size > taken ? size - taken : 0;
  VkPhysicalDeviceMemoryBudgetPropertiesEXT budgets{};
  budgets.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT;
  VkPhysicalDeviceMemoryProperties2 properties{};
  properties.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2;
  properties.pNext = &budgets;
  api.vkGetPhysicalDeviceMemoryProperties2(physical, &properties);
  const uint64_t limit = budgets.heapBudget[heap];
  const uint64_t used = budgets.heapUsage[heap];
  return limit > used ? limit - used : 0;
}

}  // namespace

void HeldMemory::release(const InstanceApi& api) {
  if (device == VK_NULL_HANDLE) return;
  for (VkDeviceMemory block : blocks)
    api.vkFreeMemory(device, block, nullptr);
  blocks.clear();
  api.vkDestroyDevice(device, nullptr);
  device = VK_NULL_HANDLE;
}

bool leaveDeviceMemory(const InstanceApi& api, VkPhysicalDevice physical, uint64_t leave,
                       HeldMemory& held) {
  VkPhysicalDeviceProperties properties{};
  api.vkGetPhysicalDeviceProperties(physical, &properties);
  if (properties.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU) return false;

  VkPhysicalDeviceMemoryProperties memory{};
  api.vkGetPhysicalDeviceMemoryProperties(physical, &memory);
  uint32_t heap = VK_MAX_MEMORY_HEAPS;
  for (uint32_t h = 0; h < memory.memoryHeapCount; ++h) {
    if ((memory.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) == 0) continue;
    if (heap == VK_MAX_MEMORY_HEAPS || memory.memoryHeaps[h].size > memory.memoryHeaps[heap].size)
      heap = h;
  }
  if (heap == VK_MAX_MEMORY_HEAPS) return false;  // no memory of the device's own to bound
  // Device-local memory of that heap, not visible to the host where the device has such.
  uint32_t type = VK_MAX_MEMORY_TYPES;
  for (uint32_t t = 0; t < memory.memoryTypeCount; ++t) {
    const VkMemoryType& m = memory.memoryTypes[t];
    if (m.heapIndex != heap || (m.propertyFlags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) == 0) {
      continue;
    }
    if (type == VK_MAX_MEMORY_TYPES ||
        (m.propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) == 0) {
      type = t;
    }
  }
  if (type == VK_MAX_MEMORY_TYPES) return false;

  const bool budget = hasBudget(api, physical);
  const uint64_t size = memory.memoryHeaps[heap].size;
  constexpr uint64_t kSmallest = uint64_t{1} << 20;
  uint64_t taken = 0;
  uint64_t left = freeBytes(api, physical, heap, budget, size, taken);
  if (left <= leave || left - leave < kSmallest) return true;

  const float priority = 1.0f;
  VkDeviceQueueCreateInfo queue{};
  queue.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
  queue.queueFamilyIndex = 0;
  queue.queueCount = 1;
  queue.pQueuePriorities = &priority;
  const char* extension = VK_EXT_MEMORY_BUDGET_EXTENSION_NAME;
  VkDeviceCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
  info.queueCreateInfoCount = 1;
  info.pQueueCreateInfos = &queue;
  info.enabledExtensionCount = budget ? 1 : 0;
  info.ppEnabledExtensionNames = budget ? &extension : nullptr;
  held.release(api);
  if (const VkResult r = api.vkCreateDevice(physical, &info, nullptr, &held.device);
      r != VK_SUCCESS) {
    failed("vkCreateDevice", r);
  }
  // Big allocations first, halved when the driver refuses one: a few calls reach the target
  // within a chunk of 1 MiB. One allocation is at most 1 GiB, within every driver's limit.
  uint64_t chunk = uint64_t{1} << 30;
  for (int round = 0; round < 65536; ++round) {
    left = freeBytes(api, physical, heap, budget, size, taken);
    if (left <= leave || left - leave < kSmallest) break;
    chunk = std::min(chunk, left - leave);
    if (chunk < kSmallest) break;
    VkMemoryAllocateInfo allocate{};
    allocate.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
    allocate.allocationSize = chunk;
    allocate.memoryTypeIndex = type;
    VkDeviceMemory block = VK_NULL_HANDLE;
    const VkResult r = api.vkAllocateMemory(held.device, &allocate, nullptr, &block);
    if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY) {
      chunk /= 2;
      continue;
    }
    if (r != VK_SUCCESS) failed("vkAllocateMemory", r);
    held.blocks.push_back(block);
    taken += chunk;
  }
  return true;
}

}  // namespace gpufuzz::vk
