// vulkan-layer-copy-in-use.c: VK_LAYER_KHRONOS_validation 1.3.239 does not report destroying a
// buffer (VUID-vkDestroyBuffer-buffer-00922) or freeing its memory (VUID-vkFreeMemory-memory-00677)
// while a submitted, not yet waited-for vkCmdCopyBuffer writes it; lavapipe (Mesa 22.3.6) then
// crashes with SIGSEGV in its queue thread. The same order with a dispatch reading the buffer
// through a descriptor is reported (00922). Layer 1.4.309 (Debian 13) reports 00922 here.
//
//   cc -o repro vulkan-layer-copy-in-use.c -lvulkan && ./repro [buffer|memory]
// buffer (the default): vkDestroyBuffer, then vkFreeMemory; memory: the other way round.
// Expected: a validation error, exit 0. The bug: no message, exit 1. The program leaves at once
// after the two calls; a SIGSEGV before that is lavapipe's, still copying into freed memory.
#include <stdio.h>
#include <string.h>
#include <unistd.h>
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
    fflush(stdout);  // seen even if lavapipe crashes next
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

int main(int argc, char** argv) {
  const int memoryFirst = argc > 1 && strcmp(argv[1], "memory") == 0;
  const char* layer = "VK_LAYER_KHRONOS_validation";
  const char* ext = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
  VkDebugUtilsMessengerCreateInfoEXT messenger = {
      VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT, NULL, 0,
      VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT, VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT,
      report, NULL};
  VkApplicationInfo app = {VK_STRUCTURE_TYPE_APPLICATION_INFO, NULL, "repro", 0, NULL, 0,
                           VK_API_VERSION_1_2};
  VkInstanceCreateInfo ii = {VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, NULL, 0, &app, 1, &layer, 1, &ext};
  VkInstance instance;
  CHECK(vkCreateInstance(&ii, NULL, &instance));
  // A messenger of its own: one chained to VkInstanceCreateInfo covers only vkCreateInstance
  // and vkDestroyInstance (the specification), and newer layers keep to that.
  PFN_vkCreateDebugUtilsMessengerEXT createMessenger =
      (PFN_vkCreateDebugUtilsMessengerEXT)vkGetInstanceProcAddr(instance, "vkCreateDebugUtilsMessengerEXT");
  VkDebugUtilsMessengerEXT messengerHandle;
  CHECK(createMessenger(instance, &messenger, NULL, &messengerHandle));
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
  bound(device, phys, staging, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT);  // freed at exit
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
  const char* first = memoryFirst ? "vkFreeMemory" : "vkDestroyBuffer";
  const char* second = memoryFirst ? "vkDestroyBuffer" : "vkFreeMemory";
  printf("%s, then %s, of the copy's target while it is pending\n", first, second);
  fflush(stdout);
  if (memoryFirst) vkFreeMemory(device, targetMemory, NULL);
  else vkDestroyBuffer(device, target, NULL);
  const int atFirst = errors;
  if (memoryFirst) vkDestroyBuffer(device, target, NULL);
  else vkFreeMemory(device, targetMemory, NULL);
  printf("layer errors: %d at %s, %d at %s (expected at least 1: VUID-vkDestroyBuffer-buffer-00922 "
         "or VUID-vkFreeMemory-memory-00677)\n", atFirst, first, errors - atFirst, second);
  fflush(stdout);
  // The copy may still write the freed memory and crash lavapipe: leave before it does.
  _exit(errors == 0);
}
