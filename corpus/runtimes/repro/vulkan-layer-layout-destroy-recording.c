// vulkan-layer-layout-destroy-recording.c: VK_LAYER_KHRONOS_validation 1.3.239 does not report
// destroying a pipeline layout that a command buffer still in the recording state has used in
// vkCmdPushConstants (VUID-vkDestroyPipelineLayout-pipelineLayout-02004). The layer's source of
// 2026-08 has no check of that VUID either.
//
//   cc -o repro vulkan-layer-layout-destroy-recording.c -lvulkan && ./repro [recording|ended]
// recording (the default): the command buffer is recording when the layout goes. Expected: a
// validation error naming 02004, exit 0. The bug: no message, exit 1.
// ended (the control): vkEndCommandBuffer first, so the destroy is valid: no message, exit 0.
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
  if ((call) != VK_SUCCESS) { printf("%s failed\n", #call); return 2; }

int main(int argc, char** argv) {
  const int ended = argc > 1 && strcmp(argv[1], "ended") == 0;
  const char* layer = "VK_LAYER_KHRONOS_validation";
  const char* ext = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
  VkApplicationInfo app = {VK_STRUCTURE_TYPE_APPLICATION_INFO, NULL, "repro", 0, NULL, 0,
                           VK_API_VERSION_1_2};
  VkInstanceCreateInfo ii = {VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, NULL, 0, &app, 1, &layer, 1, &ext};
  VkInstance instance;
  CHECK(vkCreateInstance(&ii, NULL, &instance));
  VkDebugUtilsMessengerCreateInfoEXT mi = {
      VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT, NULL, 0,
      VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT, VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT,
      report, NULL};
  PFN_vkCreateDebugUtilsMessengerEXT createMessenger =
      (PFN_vkCreateDebugUtilsMessengerEXT)vkGetInstanceProcAddr(instance,
                                                                "vkCreateDebugUtilsMessengerEXT");
  VkDebugUtilsMessengerEXT messenger;
  CHECK(createMessenger(instance, &mi, NULL, &messenger));
  uint32_t count = 1;
  VkPhysicalDevice physical;
  vkEnumeratePhysicalDevices(instance, &count, &physical);
  if (count == 0) { printf("no Vulkan device\n"); return 2; }
  const float priority = 1.0f;
  VkDeviceQueueCreateInfo qi = {VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, NULL, 0, 0, 1, &priority};
  VkDeviceCreateInfo di = {VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, NULL, 0, 1, &qi, 0, NULL, 0, NULL, NULL};
  VkDevice device;
  CHECK(vkCreateDevice(physical, &di, NULL, &device));

  VkPushConstantRange push = {VK_SHADER_STAGE_COMPUTE_BIT, 0, 4};
  VkPipelineLayoutCreateInfo li = {VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO, NULL, 0, 0, NULL, 1, &push};
  VkPipelineLayout layout;
  CHECK(vkCreatePipelineLayout(device, &li, NULL, &layout));
  VkCommandPoolCreateInfo pi = {VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO, NULL, 0, 0};
  VkCommandPool pool;
  CHECK(vkCreateCommandPool(device, &pi, NULL, &pool));
  VkCommandBufferAllocateInfo ai = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, NULL, pool,
                                    VK_COMMAND_BUFFER_LEVEL_PRIMARY, 1};
  VkCommandBuffer commands;
  CHECK(vkAllocateCommandBuffers(device, &ai, &commands));
  VkCommandBufferBeginInfo bi = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO, NULL, 0, NULL};
  CHECK(vkBeginCommandBuffer(commands, &bi));
  const uint32_t value = 7;
  vkCmdPushConstants(commands, layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof value, &value);
  if (ended) CHECK(vkEndCommandBuffer(commands));
  const int before = errors;
  vkDestroyPipelineLayout(device, layout, NULL);  // 02004 when the buffer is still recording
  const int reported = errors - before;
  printf("%s: layer errors at vkDestroyPipelineLayout: %d\n", ended ? "ended" : "recording",
         reported);
  vkDestroyCommandPool(device, pool, NULL);
  vkDestroyDevice(device, NULL);
  PFN_vkDestroyDebugUtilsMessengerEXT destroyMessenger =
      (PFN_vkDestroyDebugUtilsMessengerEXT)vkGetInstanceProcAddr(instance,
                                                                 "vkDestroyDebugUtilsMessengerEXT");
  destroyMessenger(instance, messenger, NULL);
  vkDestroyInstance(instance, NULL);
  if (ended) return reported == 0 && errors == 0 ? 0 : 1;
  return reported > 0 ? 0 : 1;
}
