// VulkanAllocator.cpp: the counted, failing host allocation callbacks.
#include "renderer/vulkan/VulkanAllocator.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "renderer/device/RuntimeSeam.h"

namespace gpufuzz::vk {

namespace {

/// Kept just before each block: its size, and how far before it the system's block starts.
struct Header {
  size_t size;
  size_t offset;
};

std::atomic<int64_t> gLive{0};

size_t headerRoom(size_t alignment) {
  return (sizeof(Header) + alignment - 1) / alignment * alignment;
}

void* allocate(size_t size, size_t alignment) {
  // The mark's host allocation fails here, before the system is asked: the runtime sees NULL.
  if (seam::detail::armed().on && seam::detail::due(seam::kHostOom, "a host allocation")) {
    return nullptr;
  }
  alignment = std::max(alignment, alignof(Header));
  const size_t room = headerRoom(alignment);
  void* block = nullptr;
  if (posix_memalign(&block, alignment, room + size) != 0) return nullptr;
  auto* user = static_cast<char*>(block) + room;
  auto* header = reinterpret_cast<Header*>(user - sizeof(Header));
  header->size = size;
  header->offset = room;
  ++gLive;
  return user;
}

void release(void* memory) {
  if (memory == nullptr) return;
  auto* user = static_cast<char*>(memory);
  const auto* header = reinterpret_cast<const Header*>(user - sizeof(Header));
  std::free(user - header->offset);
  --gLive;
}

VKAPI_ATTR void* VKAPI_CALL onAllocation(void*, size_t size, size_t alignment,
                                         VkSystemAllocationScope) {
  return size == 0 ? nullptr : allocate(size, alignment);
}

VKAPI_ATTR void* VKAPI_CALL onReallocation(void*, void* original, size_t size, size_t alignment,
                                           VkSystemAllocationScope) {
  if (original == nullptr) return size == 0 ? nullptr : allocate(size, alignment);
  if (size == 0) {
    release(original);
    return nullptr;
  }
  void* moved = allocate(size, alignment);
  if (moved == nullptr) return nullptr;  // the original stays, as realloc leaves it
  const auto* header =
      reinterpret_cast<const Header*>(static_cast<char*>(original) - sizeof(Header));
  std::memcpy(moved, original, std::min(size, header->size));
  release(original);
  return moved;
}

VKAPI_ATTR void VKAPI_CALL onFree(void*, void* memory) {
  release(memory);
}

const VkAllocationCallbacks kCallbacks = {nullptr, onAllocation, onReallocation,
                                          onFree,  nullptr,      nullptr};

}  // namespace

const VkAllocationCallbacks* countingAllocator() {
  return &kCallbacks;
}

int64_t liveHostAllocations() {
  return gLive.load();
}

}  // namespace gpufuzz::vk
