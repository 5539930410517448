// VulkanApi.h: the Vulkan loader, opened at run time from libvulkan.so.1.
//
// Nothing in the project links libvulkan, so every program starts on a machine without it. The
// headers are used for their types only (VK_NO_PROTOTYPES); every entry point is resolved through
// vkGetInstanceProcAddr: the global ones once, the instance and device ones for the instance that
// uses them (device calls go through the loader's trampolines, so one table serves every device
// of the instance).
#pragma once

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include <string>

namespace gpufuzz::vk {

/// Global entry points, instance entry points and device entry points, in one list.
#define GPUFUZZ_VK_GLOBAL(X)                \
  X(vkEnumerateInstanceLayerProperties)     \
  X(vkEnumerateInstanceExtensionProperties) \
  X(vkEnumerateInstanceVersion)             \
  X(vkCreateInstance)

#define GPUFUZZ_VK_INSTANCE(X)                \
  X(vkDestroyInstance)                        \
  X(vkEnumeratePhysicalDevices)               \
  X(vkGetPhysicalDeviceProperties)            \
  X(vkGetPhysicalDeviceProperties2)           \
  X(vkGetPhysicalDeviceFeatures)              \
  X(vkGetPhysicalDeviceFeatures2)             \
  X(vkGetPhysicalDeviceQueueFamilyProperties) \
  X(vkGetPhysicalDeviceMemoryProperties)      \
  X(vkGetPhysicalDeviceMemoryProperties2)     \
  X(vkEnumerateDeviceExtensionProperties)     \
  X(vkCreateDevice)                           \
  X(vkCreateDebugUtilsMessengerEXT)           \
  X(vkDestroyDebugUtilsMessengerEXT)          \
  X(vkDestroyDevice)                          \
  X(vkGetDeviceQueue)                         \
  X(vkDeviceWaitIdle)                         \
  X(vkCreateBuffer)                           \
  X(vkDestroyBuffer)                          \
  X(vkGetBufferMemoryRequirements)            \
  X(vkAllocateMemory)                         \
  X(vkFreeMemory)                             \
  X(vkBindBufferMemory)                       \
  X(vkMapMemory)                              \
  X(vkUnmapMemory)                            \
  X(vkCreateShaderModule)                     \
  X(vkDestroyShaderModule)                    \
  X(vkCreateDescriptorSetLayout)              \
  X(vkDestroyDescriptorSetLayout)             \
  X(vkCreatePipelineLayout)                   \
  X(vkDestroyPipelineLayout)                  \
  X(vkCreateComputePipelines)                 \
  X(vkDestroyPipeline)                        \
  X(vkCreateDescriptorPool)                   \
  X(vkDestroyDescriptorPool)                  \
  X(vkAllocateDescriptorSets)                 \
  X(vkFreeDescriptorSets)                     \
  X(vkUpdateDescriptorSets)                   \
  X(vkCreateCommandPool)                      \
  X(vkDestroyCommandPool)                     \
  X(vkAllocateCommandBuffers)                 \
  X(vkFreeCommandBuffers)                     \
  X(vkBeginCommandBuffer)                     \
  X(vkEndCommandBuffer)                       \
  X(vkCmdPipelineBarrier)                     \
  X(vkCmdBindPipeline)                        \
  X(vkCmdBindDescriptorSets)                  \
  X(vkCmdPushConstants)                       \
  X(vkCmdDispatch)                            \
  X(vkCmdCopyBuffer)                          \
  X(vkCreateFence)                            \
  X(vkDestroyFence)                           \
  X(vkResetFences)                            \
  X(vkGetFenceStatus)                         \
  X(vkWaitForFences)                          \
  X(vkQueueSubmit)                            \
  X(vkQueueWaitIdle)                          \
  X(vkResetCommandBuffer)                     \
  X(vkResetCommandPool)                       \
  X(vkResetDescriptorPool)                    \
  X(vkCmdFillBuffer)                          \
  X(vkCreateSemaphore)                        \
  X(vkDestroySemaphore)                       \
  X(vkSignalSemaphore)                        \
  X(vkWaitSemaphores)                         \
  X(vkGetSemaphoreCounterValue)

struct Loader {
#define GPUFUZZ_VK_MEMBER(name) PFN_##name name = nullptr;
  PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
  GPUFUZZ_VK_GLOBAL(GPUFUZZ_VK_MEMBER)
#undef GPUFUZZ_VK_MEMBER
};

struct InstanceApi {
#define GPUFUZZ_VK_MEMBER(name) PFN_##name name = nullptr;
  GPUFUZZ_VK_INSTANCE(GPUFUZZ_VK_MEMBER)
#undef GPUFUZZ_VK_MEMBER
};

/// The loader, opened once per process. Throws DeviceUnavailable (the same message every time)
/// when libvulkan.so.1 is missing or lacks its global entry points.
const Loader& loader();

/// The instance-level and device-level entry points of `instance`. Entry points of extensions
/// that were not enabled (the debug messenger without validation) stay null; a missing core one
/// throws DeviceUnavailable.
InstanceApi loadInstanceApi(const Loader& loader, VkInstance instance);

/// "VK_ERROR_OUT_OF_DEVICE_MEMORY", or "VkResult -13" for a code not named here.
std::string resultName(VkResult result);

}  // namespace gpufuzz::vk
