// VulkanDeviceMemory.h: --device-memory on Vulkan (docs/failures.md): the device's memory taken
// until about the asked bytes are left, so that the run's own allocations run out for real.
#pragma once

#include <cstdint>
#include <vector>

#include "renderer/vulkan/VulkanApi.h"

namespace gpufuzz::vk {

/// Memory taken for --device-memory: a device of its own and its allocations. Its holder gives
/// them back before it destroys the instance: an instance destroyed with a device alive is
/// invalid, and NVIDIA's driver then crashes at exit.
struct HeldMemory {
  VkDevice device = VK_NULL_HANDLE;
  std::vector<VkDeviceMemory> blocks;
  void release(const InstanceApi& api);
};

/// Takes memory of `physical`'s largest device-local heap until about `leave` bytes of it are
/// free: allocations on a device of its own, kept in `held`. Free memory is
/// the heap's budget less its use (VK_EXT_memory_budget), which counts other processes' memory;
/// without the extension, the heap's size less what this call took. Returns false, having done
/// nothing, for a CPU device (lavapipe): its heap is the host's memory, which no allocation
/// bounds. A `leave` of at least the heap's free memory takes nothing: the probe asks so. Throws
/// DeviceError naming the call that failed.
bool leaveDeviceMemory(const InstanceApi& api, VkPhysicalDevice physical, uint64_t leave,
                       HeldMemory& held);

}  // namespace gpufuzz::vk
