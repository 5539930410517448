// VulkanValidation.cpp: the instance under the validation layer, and the layer's messages.
#include "renderer/vulkan/VulkanValidation.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "renderer/device/DeviceError.h"

namespace gpufuzz::vk {

namespace {

constexpr const char* kValidationLayer = "VK_LAYER_KHRONOS_validation";

/// The layer's properties, when it is installed.
std::optional<VkLayerProperties> findValidationLayer(const Loader& loader) {
  uint32_t count = 0;
  if (loader.vkEnumerateInstanceLayerProperties(&count, nullptr) != VK_SUCCESS) return {};
  std::vector<VkLayerProperties> layers(count);
  if (loader.vkEnumerateInstanceLayerProperties(&count, layers.data()) != VK_SUCCESS) return {};
  for (const VkLayerProperties& layer : layers) {
    if (std::strcmp(layer.layerName, kValidationLayer) == 0) return layer;
  }
  return {};
}

}  // namespace

ValidationMessages::ValidationMessages(bool perThread)
    : log_(std::getenv("GPUFUZZ_VULKAN_LOG") != nullptr), perThread_(perThread) {}

VKAPI_ATTR VkBool32 VKAPI_CALL ValidationMessages::callback(
    VkDebugUtilsMessageSeverityFlagBitsEXT severity, VkDebugUtilsMessageTypeFlagsEXT types,
    const VkDebugUtilsMessengerCallbackDataEXT* data, void* self) {
  auto& messages = *static_cast<ValidationMessages*>(self);
  if (messages.log_) {
    std::fprintf(stderr, "vulkan validation [%s]: %s\n",
                 data->pMessageIdName != nullptr ? data->pMessageIdName : "",
                 data->pMessage != nullptr ? data->pMessage : "");
  }
  if ((severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) == 0) return VK_FALSE;
  if ((types & VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT) == 0) return VK_FALSE;
  const std::lock_guard lock(messages.mutex_);
  messages.first_.try_emplace(std::this_thread::get_id(),
                              Error{data->pMessageIdName != nullptr ? data->pMessageIdName : "",
                                    essence(data->pMessage != nullptr ? data->pMessage : "")});
  // Asks the layer to skip the call, where it can: the run stops before the call does harm.
  return VK_TRUE;
}

std::string ValidationMessages::essence(std::string message) {
  const std::size_t bar = message.rfind(" | ");
  if (bar != std::string::npos) message.erase(0, bar + 3);
  const std::size_t spec = message.find(" The Vulkan spec states:");
  if (spec != std::string::npos) message.erase(spec);
  return message;
}

std::optional<ValidationMessages::Error> ValidationMessages::take() {
  const std::lock_guard lock(mutex_);
  auto it = first_.find(std::this_thread::get_id());
  if (it == first_.end() && !perThread_) it = first_.begin();
  if (it == first_.end()) return std::nullopt;
  Error error = std::move(it->second);
  if (perThread_) {
    first_.erase(it);
  } else {
    first_.clear();
  }
  return error;
}

std::string versionText(uint32_t version) {
  return std::to_string(VK_API_VERSION_MAJOR(version)) + "." +
         std::to_string(VK_API_VERSION_MINOR(version)) + "." +
         std::to_string(VK_API_VERSION_PATCH(version));
}

void Instance::destroy() {
  if (instance == VK_NULL_HANDLE) return;
  if (messenger != VK_NULL_HANDLE)
    api.vkDestroyDebugUtilsMessengerEXT(instance, messenger, nullptr);
  if (api.vkDestroyInstance != nullptr) api.vkDestroyInstance(instance, nullptr);
  instance = VK_NULL_HANDLE;
  messenger = VK_NULL_HANDLE;
}

Instance makeInstance(const Loader& loader, std::optional<bool> validation,
                      ValidationMessages& messages) {
  const std::optional<VkLayerProperties> layer = findValidationLayer(loader);
  Instance made;
  made.validation = validation.value_or(layer.has_value());
  if (made.validation && !layer) {
    throw DeviceUnavailable(std::string("--validation on: the Vulkan validation layer (") +
                            kValidationLayer +
                            ") is not installed; install vulkan-validationlayers or point "
                            "VK_ADD_LAYER_PATH at it");
  }

  if (made.validation) {
    // Layer 1.4.309 reports a message at most 10 times per instance by default, and 1.3.239's
    // callback gets every one. The executor predicts every report, so the limit must not hold:
    // replayed in the 1.4.309 root, 11 ends of a command buffer not recording gave 10 reports.
    // Set before the instance, which reads it, and before the process starts threads.
    setenv("VK_LAYER_DUPLICATE_MESSAGE_LIMIT", "2147483647", /*overwrite=*/1);
  }

  VkApplicationInfo app{};
  app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
  app.pApplicationName = "gpufuzz";
  app.apiVersion = VK_API_VERSION_1_2;

  VkDebugUtilsMessengerCreateInfoEXT messenger{};
  messenger.sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT;
  messenger.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT |
                              VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT;
  messenger.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                          VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT |
                          VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT;
  messenger.pfnUserCallback = &ValidationMessages::callback;
  messenger.pUserData = &messages;

  const VkValidationFeatureEnableEXT enables[] = {
      VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
  VkValidationFeaturesEXT features{};
  features.sType = VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT;
  features.pNext = &messenger;
  features.enabledValidationFeatureCount = 1;
  features.pEnabledValidationFeatures = enables;

  const char* layers[] = {kValidationLayer};
  const char* extensions[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME,
                              VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME};
  VkInstanceCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
  info.pApplicationInfo = &app;
  if (made.validation) {
    info.pNext = &features;
    info.enabledLayerCount = 1;
    info.ppEnabledLayerNames = layers;
    info.enabledExtensionCount = 2;
    info.ppEnabledExtensionNames = extensions;
  }
  const VkResult created = loader.vkCreateInstance(&info, nullptr, &made.instance);
  if (created != VK_SUCCESS) {
    throw DeviceUnavailable("vkCreateInstance: " + resultName(created) +
                            (created == VK_ERROR_INCOMPATIBLE_DRIVER
                                 ? " (no Vulkan driver: install mesa-vulkan-drivers for lavapipe)"
                                 : ""));
  }
  try {
    made.api = loadInstanceApi(loader, made.instance);
    if (made.validation) {
      if (made.api.vkCreateDebugUtilsMessengerEXT == nullptr) {
        throw DeviceUnavailable("the validation layer offers no vkCreateDebugUtilsMessengerEXT");
      }
      const VkResult result = made.api.vkCreateDebugUtilsMessengerEXT(made.instance, &messenger,
                                                                      nullptr, &made.messenger);
      if (result != VK_SUCCESS) {
        throw DeviceUnavailable("vkCreateDebugUtilsMessengerEXT: " + resultName(result));
      }
    }
  } catch (...) {
    made.destroy();
    throw;
  }
  made.layerVersion = made.validation ? layer->specVersion : 0;
  made.validationText = made.validation ? ", validation layer " + versionText(layer->specVersion) +
                                              " (synchronization validation on)"
                                        : ", validation off";
  return made;
}

}  // namespace gpufuzz::vk
