// VulkanAllocator.h: host allocation callbacks that the vulkan model's executor passes to every
// call that takes them (docs/failures.md, "Exhaustion for real"). With a `host-oom` mark armed
// at the runtime-call seam, the N-th host allocation the runtime itself asks for inside the
// operation returns NULL, so the driver's own error path runs, as in the CTS's
// alloc_callback_fail. They count what is still allocated, so a driver that keeps host memory
// after its objects are destroyed is seen.
#pragma once

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include <cstdint>

namespace gpufuzz::vk {

/// The callbacks: the system's aligned allocator, counted, failing the armed allocation.
const VkAllocationCallbacks* countingAllocator();

/// Host allocations made through countingAllocator() and not yet freed, process-wide.
int64_t liveHostAllocations();

}  // namespace gpufuzz::vk
