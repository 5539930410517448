// vulkan-layer-copy-in-use.c: VK_LAYER_KHRONOS_validation 1.3.239 does not report destroying a
// buffer (VUID-vkDestroyBuffer-buffer-00922) or freeing its memory (VUID-vkFreeMemory-memory-00677)
// while a submitted, not yet waited-for vkCmdCopyBuffer writes it; lavapipe (Mesa 22.3.6) then
// crashes with SIGSEGV in its queue thread. The same order with a dispatch reading the buffer
// through a descriptor is reported (00922).
//
//   cc -o repro vulkan-layer-copy-in-use.c -lvulkan && ./repro
// Expected: a validation error at vkDestroyBuffer. Seen: no message, then SIGSEGV (or silence).
#include <stdio.h>
#include <string.h>
#include <vulkan/vulkan.h>

static int errors;
static VKAPI_ATTR VkBool32 VKAPI_CALL report(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                             VkDebugUtilsMessageTypeFlagsEXT type,
                                             const VkDebugUtilsMessengerCallbackDataEXT* data,
                                             void* user) {
  (void)type, (void)user;
  if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) {
    ++errors;
    printf("layer: %s\n", data->pMessageIdName);
  }
  return VK_FALSE;
}

#define CHECK(call) \
  if ((call) != VK_SUCCESS) { printf("%s failed\n", #call); return 1; }

static VkDeviceMemory bound(VkDevice d, VkPhysicalDevice p, VkBuffer b, VkMemoryPropertyFlags want) {
  VkMemoryRequirements r;
  vkGetBufferMemoryRequirements(d, b, &r);
  VkPhysicalDeviceMemoryProperties m;
  vkGetPhysicalDeviceMemoryProperties(p, &m);
  uint32_t type = 0;
  while (!((r.memoryTypeBits >> type) & 1) || (m.memoryTypes[type].propertyFlags & want) != want) ++type;
  VkMemoryAllocateInfo a = {VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, NULL, r.size, type};
  VkDeviceMemory memory;
  vkAllocateMemory(d, &a, NULL, &memory);
  vkBindBufferMemory(d, b, memory, 0);
  return memory;
}

int main(void) {
  const char* layer = "VK_LAYER_KHRONOS_validation";
  const char* ext = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
  VkDebugUtilsMessengerCreateInfoEXT messenger = {
      VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT, NULL, 0,
      VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT, VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT,
      report, NULL};
  VkApplicationInfo app = {VK_STRUCTURE_TYPE_APPLICATION_INFO, NULL, "repro", 0, NULL, 0,
                           VK_API_VERSION_1_2};
  VkInstanceCreateInfo ii = {VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, &messenger, 0, &app, 1, &layer, 1, &ext};
  VkInstance instance;
  CHECK(vkCreateInstance(&ii, NULL, &instance));
  uint32_t n = 1;
  VkPhysicalDevice phys;
  vkEnumeratePhysicalDevices(instance, &n, &phys);
  float priority = 1;
  VkDeviceQueueCreateInfo qi = {VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, NULL, 0, 0, 1, &priority};
  VkDeviceCreateInfo di = {VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, NULL, 0, 1, &qi};
  VkDevice device;
  CHECK(vkCreateDevice(phys, &di, NULL, &device));
  VkQueue queue;
  vkGetDeviceQueue(device, 0, 0, &queue);

  const VkDeviceSize bytes = 64u << 20;  // a copy long enough to be surely pending
  VkBufferCreateInfo bi = {VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, NULL, 0, bytes,
                           VK_BUFFER_USAGE_TRANSFER_SRC_BIT, VK_SHARING_MODE_EXCLUSIVE};
  VkBuffer staging, target;
  CHECK(vkCreateBuffer(device, &bi, NULL, &staging));
  VkDeviceMemory stagingMemory = bound(device, phys, staging, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT);
  bi.usage = VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  CHECK(vkCreateBuffer(device, &bi, NULL, &target));
  VkDeviceMemory targetMemory = bound(device, phys, target, 0);

  VkCommandPoolCreateInfo pi = {VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO, NULL, 0, 0};
  VkCommandPool pool;
  CHECK(vkCreateCommandPool(device, &pi, NULL, &pool));
  VkCommandBufferAllocateInfo ai = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, NULL, pool,
                                    VK_COMMAND_BUFFER_LEVEL_PRIMARY, 1};
  VkCommandBuffer cb;
  CHECK(vkAllocateCommandBuffers(device, &ai, &cb));
  VkCommandBufferBeginInfo begin = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  vkBeginCommandBuffer(cb, &begin);
  VkBufferCopy region = {0, 0, bytes};
  vkCmdCopyBuffer(cb, staging, target, 1, &region);
  vkEndCommandBuffer(cb);
  VkFenceCreateInfo fi = {VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  VkFence fence;
  CHECK(vkCreateFence(device, &fi, NULL, &fence));
  VkSubmitInfo si = {VK_STRUCTURE_TYPE_SUBMIT_INFO, NULL, 0, NULL, NULL, 1, &cb};
  CHECK(vkQueueSubmit(queue, 1, &si, fence));

  // The bug: the copy is pending (its fence not waited for), and the layer says nothing.
  printf("vkDestroyBuffer + vkFreeMemory of the copy's target while it is pending\n");
  fflush(stdout);
  vkDestroyBuffer(device, target, NULL);
  vkFreeMemory(device, targetMemory, NULL);
  printf("layer errors so far: %d (expected at least 1: VUID-vkDestroyBuffer-buffer-00922)\n", errors);
  fflush(stdout);
  vkWaitForFences(device, 1, &fence, VK_TRUE, UINT64_MAX);

  vkDestroyFence(device, fence, NULL);
  vkDestroyCommandPool(device, pool, NULL);
  vkDestroyBuffer(device, staging, NULL);
  vkFreeMemory(device, stagingMemory, NULL);
  vkDestroyDevice(device, NULL);
  vkDestroyInstance(instance, NULL);
  return errors == 0;
}
