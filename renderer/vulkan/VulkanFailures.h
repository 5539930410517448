// VulkanFailures.h: which Vulkan entry points a mark can fail, and how (docs/failures.md). The
// process's instance table (VulkanApi.cpp) and the layer the harness enables in targets
// (renderer/interpose/VulkanLayer.cpp) wrap the same list, so the runner and a target fail the
// same calls.
#pragma once

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include "renderer/device/RuntimeSeam.h"

namespace gpufuzz::vk {

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

/// A call that waits on the device: out of device memory, or the device lost.
inline constexpr seam::Kinds kVkWait = seam::kOom | seam::kLost;

// Every entry point of an operation that returns a VkResult, with the errors its specification
// lists: device memory for a create, an allocation, a recording or a submit; a lost device for a
// submit and every wait. Destroys, frees and commands stay the loader's own. Each row:
// X(entry point, kinds, whether its specification lists VK_ERROR_OUT_OF_HOST_MEMORY too).
// The runner fails host memory in the driver's own allocations instead (VulkanAllocator.h); the
// layer, which has no allocator of the program's to fail, returns the code where it is listed.
#define GPUFUZZ_VK_FAILABLE(X)                     \
  X(vkCreateDevice, kVkWait, true)                 \
  X(vkCreateBuffer, seam::kOom, true)              \
  X(vkAllocateMemory, seam::kOom, true)            \
  X(vkBindBufferMemory, seam::kOom, true)          \
  X(vkMapMemory, seam::kOom, true)                 \
  X(vkCreateShaderModule, seam::kOom, true)        \
  X(vkCreateDescriptorSetLayout, seam::kOom, true) \
  X(vkCreatePipelineLayout, seam::kOom, true)      \
  X(vkCreateComputePipelines, seam::kOom, true)    \
  X(vkCreateDescriptorPool, seam::kOom, true)      \
  X(vkAllocateDescriptorSets, seam::kOom, true)    \
  X(vkCreateCommandPool, seam::kOom, true)         \
  X(vkAllocateCommandBuffers, seam::kOom, true)    \
  X(vkBeginCommandBuffer, seam::kOom, true)        \
  X(vkEndCommandBuffer, seam::kOom, true)          \
  X(vkCreateFence, seam::kOom, true)               \
  X(vkResetFences, seam::kOom, false)              \
  X(vkCreateSemaphore, seam::kOom, true)           \
  X(vkSignalSemaphore, seam::kOom, true)           \
  X(vkResetCommandBuffer, seam::kOom, false)       \
  X(vkResetCommandPool, seam::kOom, false)         \
  X(vkQueueSubmit, kVkWait, true)                  \
  X(vkQueueWaitIdle, kVkWait, true)                \
  X(vkDeviceWaitIdle, kVkWait, true)               \
  X(vkWaitForFences, kVkWait, true)                \
  X(vkGetFenceStatus, kVkWait, false)              \
  X(vkWaitSemaphores, kVkWait, true)               \
  X(vkGetSemaphoreCounterValue, kVkWait, true)

}  // namespace gpufuzz::vk
