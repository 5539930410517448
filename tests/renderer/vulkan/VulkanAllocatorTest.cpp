// VulkanAllocatorTest.cpp: the allocation callbacks of the `vulkan` model's executor
// (VulkanAllocator.h). They must give aligned blocks, keep a block's bytes across a reallocation,
// count what is still allocated (the check that a driver kept none past its objects' destroy),
// and fail the armed host allocation, the N-th of the thread, with NULL.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "renderer/device/RuntimeSeam.h"
#include "renderer/vulkan/VulkanAllocator.h"

namespace gpufuzz::vk {
namespace {

constexpr VkSystemAllocationScope kScope = VK_SYSTEM_ALLOCATION_SCOPE_OBJECT;

TEST(VulkanAllocator, GivesAlignedBlocksAndCountsWhatIsStillAllocated) {
  const VkAllocationCallbacks* a = countingAllocator();
  const int64_t before = liveHostAllocations();
  void* block = a->pfnAllocation(a->pUserData, 100, 256, kScope);
  ASSERT_NE(block, nullptr);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(block) % 256, 0U);
  EXPECT_EQ(liveHostAllocations(), before + 1) << "a block kept is counted";
  std::memset(block, 0x5a, 100);
  void* grown = a->pfnReallocation(a->pUserData, block, 4000, 64, kScope);
  ASSERT_NE(grown, nullptr);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(grown) % 64, 0U);
  EXPECT_EQ(static_cast<unsigned char*>(grown)[99], 0x5a) << "the bytes move with the block";
  EXPECT_EQ(liveHostAllocations(), before + 1) << "a reallocation is still one block";
  a->pfnFree(a->pUserData, grown);
  EXPECT_EQ(liveHostAllocations(), before) << "a freed block is no longer counted";
}

TEST(VulkanAllocator, TheArmedHostAllocationOfTheThreadFails) {
  const VkAllocationCallbacks* a = countingAllocator();
  seam::arm(CallFailure{FailureKind::HostMemory, 2});
  void* first = a->pfnAllocation(a->pUserData, 32, 8, kScope);
  void* second = a->pfnAllocation(a->pUserData, 32, 8, kScope);
  void* third = a->pfnAllocation(a->pUserData, 32, 8, kScope);
  const std::optional<seam::Fired> fired = seam::disarm();
  EXPECT_NE(first, nullptr);
  EXPECT_EQ(second, nullptr) << "the second host allocation was the one armed";
  EXPECT_NE(third, nullptr) << "a mark fails one call";
  ASSERT_TRUE(fired.has_value());
  EXPECT_EQ(fired->kind, FailureKind::HostMemory);
  a->pfnFree(a->pUserData, first);
  a->pfnFree(a->pUserData, third);

  // Armed for device memory, the callbacks fail nothing: only host allocations are theirs.
  seam::arm(CallFailure{FailureKind::DeviceMemory, 1});
  void* kept = a->pfnAllocation(a->pUserData, 32, 8, kScope);
  EXPECT_NE(kept, nullptr);
  EXPECT_FALSE(seam::disarm().has_value());
  a->pfnFree(a->pUserData, kept);
}

}  // namespace
}  // namespace gpufuzz::vk
